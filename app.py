"""sdccore dashboard (placeholder until the dashboard issue): shows the bundled sample."""

import streamlit as st

import sdccore

st.set_page_config(page_title="sdccore - disclosure control", layout="wide")
st.title("sdccore: disclosure control of continuous microdata")
st.write(
    "Protection by factor analysis, principal components and microaggregation plus noise. "
    "The full dashboard is being built; this page shows the bundled Tarragona sample and a "
    "quick protection so you can check the installation."
)
data = sdccore.load_dataset("tarragona")
st.subheader(f"Tarragona sample: {data.shape[0]} records x {data.shape[1]} variables")
st.dataframe(data.head(20), key="preview")
method = st.selectbox("Method", ["fa", "pca", "magg"], key="method")
seed = st.number_input("Seed", min_value=0, value=12345, step=1, key="seed")
if st.button("Protect", key="run"):
    res = sdccore.protect(data, method=method, rng=int(seed))
    st.dataframe(res.data.head(20), key="protected")
    st.download_button("Download protected CSV", res.data.to_csv(index=False), "protected.csv", "text/csv", key="download")
