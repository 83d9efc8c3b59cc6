"""The standard library's docstrings as a corpus."""

from sklearn_svi import load_python_docstrings


def test_python_docstrings_are_a_labelled_corpus_of_long_texts():
    texts, modules = load_python_docstrings(min_words=30)
    assert len(texts) == len(modules) > 1000
    assert min(len(text.split()) for text in texts) >= 30
    assert {"email", "asyncio", "logging"} <= set(modules)
    # The same texts in the same order every time.
    assert load_python_docstrings(min_words=30)[0] == texts
