"""WordSketch: hashed counts of an open vocabulary, with readable buckets."""

import pickle
from collections import Counter

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
from sklearn.pipeline import make_pipeline

from sklearn_svi import SmoothedLDA, WordSketch, top_words


def hashing(n_features=2**12, **params):
    return HashingVectorizer(
        n_features=n_features, alternate_sign=False, norm=None, **params
    )


def zipf_texts(n_texts, n_words, rng, offset=0, length=12):
    """Texts of words w<i> drawn with probability proportional to 1 / rank."""
    weights = 1.0 / np.arange(1, n_words + 1)
    words = rng.choice(n_words, size=(n_texts, length), p=weights / weights.sum())
    return [" ".join(f"w{offset + w}" for w in text) for text in words]


def exact_bucket_counts(sketch, texts):
    """Each bucket's words with their exact counts."""
    analyze = sketch.vectorizer_.build_analyzer()
    counts = Counter(token for text in texts for token in analyze(text))
    buckets = {}
    for word, count in counts.items():
        bucket = sketch._buckets(np.array([word], dtype=object))[0]
        buckets.setdefault(bucket, Counter())[word] = count
    return buckets


def test_the_counts_are_the_hashing_vectorizers():
    texts = ["the cat sat on the mat", "a dog", "the dog sat"]
    sketch = WordSketch(hashing()).fit(texts)
    expected = hashing().transform(texts)
    assert (sketch.transform(texts) != expected).nnz == 0
    assert sketch.bucket_counts_.sum() == expected.sum()
    assert_array_equal(sketch.bucket_counts_, np.asarray(expected.sum(axis=0))[0])
    names = sketch.get_feature_names_out()
    assert sorted(names[expected[0].indices]) == ["cat", "mat", "on", "sat", "the"]
    assert sketch.n_documents_seen_ == 3


def test_summaries_keep_the_frequent_words_within_the_misra_gries_bound():
    # Few buckets, so that many words share each one.
    rng = np.random.default_rng(0)
    texts = zipf_texts(3000, 2000, rng)
    sketch = WordSketch(hashing(n_features=64), n_candidates=3)
    for start in range(0, len(texts), 250):
        sketch.partial_fit(texts[start : start + 250])
    exact = exact_bucket_counts(sketch, texts)
    for bucket, words in exact.items():
        total = sum(words.values())
        assert sketch.bucket_counts_[bucket] == total
        kept = dict(
            zip(sketch.candidate_words_[bucket], sketch.candidate_counts_[bucket])
        )
        slack = (total - sum(kept.values())) / 4
        for word, count in words.items():
            estimate = kept.get(word, 0.0)
            assert count - slack - 1e-9 <= estimate <= count
            if count > total / 4:
                assert word in kept
        # The name is the most frequent word whenever it is a clear leader.
        (first, first_count), (_, second_count) = (words.most_common(2) + [("", 0)])[:2]
        if first_count - second_count > 2 * slack:
            assert sketch.get_feature_names_out()[bucket] == first


def test_merged_sketches_equal_one_sketch_of_both_streams_when_words_fit():
    # With at most n_candidates words per bucket the summaries are exact,
    # and a merge is the sketch of both parts.
    rng = np.random.default_rng(1)
    first, second = zipf_texts(200, 30, rng), zipf_texts(200, 30, rng, offset=20)
    params = dict(vectorizer=hashing(n_features=2**16), n_candidates=3)
    merged = WordSketch(**params).fit(first).merge(WordSketch(**params).fit(second))
    whole = WordSketch(**params).fit(first + second)
    assert_array_equal(merged.bucket_counts_, whole.bucket_counts_)
    assert_array_equal(merged.get_feature_names_out(), whole.get_feature_names_out())
    assert_array_equal(merged.candidate_counts_, whole.candidate_counts_)
    assert merged.n_documents_seen_ == 400


def test_a_merge_of_crowded_sketches_keeps_the_misra_gries_bound():
    rng = np.random.default_rng(2)
    parts = [zipf_texts(800, 1500, rng) for _ in range(3)]
    params = dict(vectorizer=hashing(n_features=32), n_candidates=2)
    merged = WordSketch(**params).fit(parts[0])
    for part in parts[1:]:
        merged = merged.merge(WordSketch(**params).fit(part))
    for bucket, words in exact_bucket_counts(merged, sum(parts, [])).items():
        total = sum(words.values())
        kept = dict(
            zip(merged.candidate_words_[bucket], merged.candidate_counts_[bucket])
        )
        slack = (total - sum(kept.values())) / 3
        for word, count in words.items():
            assert count - slack - 1e-9 <= kept.get(word, 0.0) <= count


def test_merging_different_sketches_is_refused():
    a = WordSketch(hashing(n_features=64)).fit(["ab cd"])
    b = WordSketch(hashing(n_features=128)).fit(["ab cd"])
    with pytest.raises(ValueError, match="same vectorizer settings"):
        a.merge(b)


@pytest.mark.parametrize(
    "vectorizer",
    [HashingVectorizer(norm=None), HashingVectorizer(alternate_sign=False)],
)
def test_a_vectorizer_that_does_not_count_is_refused(vectorizer):
    with pytest.raises(ValueError, match="alternate_sign=False and norm=None"):
        WordSketch(vectorizer).fit(["a b"])


def test_a_single_string_is_refused():
    sketch = WordSketch(hashing()).fit(["a b"])
    with pytest.raises(ValueError, match="string object received"):
        sketch.partial_fit("a b c")
    with pytest.raises(ValueError, match="string object received"):
        sketch.transform("a b c")


def test_empty_buckets_are_named_by_their_index_and_shares_are_bounds():
    sketch = WordSketch(hashing(n_features=16), n_candidates=1).fit(["xx yy zz xx"])
    names = sketch.get_feature_names_out()
    empty = np.flatnonzero(sketch.bucket_counts_ == 0)
    assert names[empty[0]] == f"bucket{empty[0]}"
    share = sketch.leading_share()
    assert np.all((share > 0) & (share <= 1))
    assert np.all(share[empty] == 1)


def test_a_stream_whose_vocabulary_doubles_keeps_readable_topics():
    # Two halves of a stream with disjoint vocabularies: a CountVectorizer
    # fitted on the first half drops every word of the second; the hashed
    # counts keep them, and the topics of the second half have names.
    rng = np.random.default_rng(3)
    first = zipf_texts(1500, 400, rng)
    second = zipf_texts(1500, 400, rng, offset=400)
    fixed = CountVectorizer().fit(first)
    assert fixed.transform(second).nnz == 0

    sketch = WordSketch(hashing(n_features=2**14))
    lda = SmoothedLDA(n_components=4, total_samples=3000, random_state=0)
    nbytes = []
    for half in (first, second):
        for start in range(0, len(half), 250):
            texts = half[start : start + 250]
            sketch.partial_fit(texts)
            lda.partial_fit(sketch.transform(texts))
            nbytes.append(lda.components_.nbytes + sketch.candidate_counts_.nbytes)
    assert len(set(nbytes)) == 1
    words = top_words(lda, sketch.get_feature_names_out(), n_words=5)
    new_words = {f"w{index}" for index in range(400, 800)}
    assert any(set(topic) <= new_words for topic in words)
    assert all(name.startswith("w") for topic in words for name in topic)


def test_in_a_pipeline_and_pickled():
    rng = np.random.default_rng(4)
    texts = zipf_texts(300, 200, rng)
    pipeline = make_pipeline(
        WordSketch(hashing()), SmoothedLDA(n_components=3, random_state=0)
    ).fit(texts)
    assert pipeline.transform(texts[:5]).shape == (5, 3)
    restored = pickle.loads(pickle.dumps(pipeline[0]))
    assert_array_equal(
        restored.get_feature_names_out(), pipeline[0].get_feature_names_out()
    )
    # fit forgets, partial_fit adds.
    sketch = WordSketch(hashing()).fit(texts)
    sketch.fit(texts[:10])
    assert sketch.n_documents_seen_ == 10
    sketch.partial_fit(texts[:10])
    assert sketch.n_documents_seen_ == 20
