"""Reading the topic report's page back: what it ranks and what it shows.

Shared by the browser tests and ``benchmarks/bench_report.py``, which
clicks every topic of a real corpus' page with them.
"""

import numpy as np


def page_ranking(data, topic, relevance_lambda):
    """A topic's words as the page ranks them, from the page's data."""
    entry = data["topics"][topic]
    words = np.array(entry["words"])
    weights = np.array(entry["weights"])
    log_probability = np.log(np.array(data["vocabulary"]["probability"]))[words]
    relevance = relevance_lambda * np.log(weights) + (1 - relevance_lambda) * (
        np.log(weights) - log_probability
    )
    order = np.lexsort((words, -weights, -relevance))[: data["nWords"]]
    return [data["vocabulary"]["names"][word] for word in words[order]]


def shown_title(browser):
    """The heading of the topic the page shows."""
    return browser.evaluate("document.getElementById('topic-title').textContent")


def shown_words(browser):
    """The words of the table of the shown topic, in their order."""
    return browser.evaluate(
        "[...document.querySelectorAll('#words tbody tr')].map(row => row.dataset.word)"
    )


def shown_documents(browser):
    """The representative documents shown: (row, text) pairs."""
    return browser.evaluate(
        "[...document.querySelectorAll('#documents li')]"
        ".map(item => [Number(item.dataset.document), item.textContent])"
    )


def expected_documents(data, topic):
    """The (row, text) pairs the page should show for a topic."""
    return [
        [row, f"{100 * share:.1f}%{data['documents'][str(row)]}"]
        for row, share in data["topics"][topic]["documents"]
    ]


def mismatches_of_a_click(browser, data, topic):
    """Click a topic on the map; what the page then shows that differs from
    its data (an empty list when nothing does)."""
    browser.click(f'#topic-map circle[data-topic="{topic}"]')
    found = []
    if shown_title(browser) != f"Topic {topic}":
        found.append(f"topic {topic}: the heading reads {shown_title(browser)!r}")
    if shown_words(browser) != page_ranking(data, topic, data["lambda"]):
        found.append(f"topic {topic}: other words are shown")
    if shown_documents(browser) != expected_documents(data, topic):
        found.append(f"topic {topic}: other documents are shown")
    return found
