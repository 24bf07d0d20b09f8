"""The placeholder dashboard renders on the bundled sample and protects it."""

from pathlib import Path

from streamlit.testing.v1 import AppTest


def test_placeholder_app_runs_and_protects():
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60).run()
    assert not at.exception
    at.selectbox(key="method").set_value("pca")
    at.button(key="run").click().run()
    assert not at.exception
    assert len(at.dataframe) == 2
