"""``python -m ui [Streamlit options]``: the dashboard (``streamlit run app.py``) with
Streamlit's outbound look-ups switched off before the server starts (``ui/privacy.py``), so
no request, not even the first, makes the server connect to the outside."""

from ui.privacy import main

main()
