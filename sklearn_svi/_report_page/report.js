"use strict";
// The topic report: draws the data of the page's JSON script element, the
// map of the topics, their table, the selected topic's words and documents
// and the prevalence over time. Sets window.reportReady when drawn.
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const MAP_SIZE = 500;
  const TIMELINE_WIDTH = 900;
  const TIMELINE_HEIGHT = 260;
  const TIMELINE_MARGIN = { left: 50, right: 20, top: 20, bottom: 40 };
  const TABLE_WORDS = 5;

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const vocabulary = data.vocabulary;
  const topics = data.topics;
  const logProbability = vocabulary.probability.map(Math.log);
  let lambda = data.lambda;
  let selected = 0;
  topics.forEach((topic, index) => {
    if (topic.prevalence > topics[selected].prevalence) selected = index;
  });

  function html(tag, properties, children) {
    const node = document.createElement(tag);
    Object.assign(node, properties || {});
    (children || []).forEach((child) => node.append(child));
    return node;
  }

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG_NS, tag);
    Object.entries(attributes || {}).forEach(([name, value]) =>
      node.setAttribute(name, value),
    );
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function percent(value) {
    return (100 * value).toFixed(1) + "%";
  }

  // The topic's words ranked by relevance at lambda, the most relevant first.
  function rankedWords(topic, atLambda) {
    return topic.words
      .map((word, position) => {
        const weight = topic.weights[position];
        const logWeight = Math.log(weight);
        return {
          word: word,
          weight: weight,
          relevance:
            atLambda * logWeight +
            (1 - atLambda) * (logWeight - logProbability[word]),
        };
      })
      .sort(
        (a, b) =>
          b.relevance - a.relevance || b.weight - a.weight || a.word - b.word,
      )
      .slice(0, data.nWords);
  }

  function topWords(topic, count) {
    return rankedWords(topic, 1)
      .slice(0, count)
      .map((entry) => vocabulary.names[entry.word])
      .join(" ");
  }

  function writeSummary() {
    const parts = [
      `${data.nDocuments.toLocaleString("en")} documents, ` +
        `${data.nFeatures.toLocaleString("en")} words, ${topics.length} topics.`,
      `Diversity of the top ${data.diversityTopN} words: ${data.diversity}.`,
      `Mean NPMI coherence of the top ${data.coherenceTopN} words: ` +
        (topics.reduce((sum, topic) => sum + topic.coherence, 0) / topics.length)
          .toFixed(3) + ".",
    ];
    if (data.stability) {
      const unstable = topics.filter((topic) => topic.unstable).length;
      parts.push(
        `Compared with ${data.stability.nOthers} other fit(s): ${unstable} ` +
          `topic(s) unstable (mean distance to their closest topic above ` +
          `${data.stability.threshold}).`,
      );
    }
    if (data.alarms.length) {
      parts.push(`Drift alarms at updates ${data.alarms.join(", ")}.`);
    }
    if (vocabulary.others) {
      parts.push(
        "Hashed vocabulary: a word names its bucket, the most frequent of " +
          "the bucket's words; hover over it for the others.",
      );
    }
    document.getElementById("summary").textContent = parts.join(" ");
  }

  function drawMap() {
    const map = document.getElementById("topic-map");
    map.setAttribute("viewBox", `0 0 ${MAP_SIZE} ${MAP_SIZE}`);
    const largest = Math.max(...topics.map((topic) => topic.prevalence));
    const maxRadius = Math.min(70, Math.max(8, 140 / Math.sqrt(topics.length)));
    const xs = topics.map((topic) => topic.x);
    const ys = topics.map((topic) => topic.y);
    const spread = Math.max(
      Math.max(...xs) - Math.min(...xs),
      Math.max(...ys) - Math.min(...ys),
      1e-9,
    );
    const scale = (MAP_SIZE - 2 * (maxRadius + 10)) / spread;
    const middleX = (Math.max(...xs) + Math.min(...xs)) / 2;
    const middleY = (Math.max(...ys) + Math.min(...ys)) / 2;
    const discs = topics.map((topic) => ({
      x: MAP_SIZE / 2 + scale * (topic.x - middleX),
      y: MAP_SIZE / 2 - scale * (topic.y - middleY),
      r: Math.max(3, maxRadius * Math.sqrt(topic.prevalence / largest)),
    }));
    const order = topics
      .map((topic, index) => index)
      .sort((a, b) => topics[b].prevalence - topics[a].prevalence);
    order.forEach((index) => {
      const topic = topics[index];
      const { x, y, r } = discs[index];
      const circle = svg("circle", {
        cx: x.toFixed(1),
        cy: y.toFixed(1),
        r: r.toFixed(1),
        "data-topic": index,
      });
      if (topic.unstable) circle.classList.add("unstable");
      circle.append(
        svg(
          "title",
          {},
          `topic ${index} (${percent(topic.prevalence)}): ` +
            topWords(topic, TABLE_WORDS),
        ),
      );
      map.append(circle, svg("text", { x: x, y: y + 3.5 }, String(index)));
    });
    // Circles overlap: a click selects the topic whose centre is nearest,
    // of those whose circles hold the point, so that every topic can be
    // chosen at its centre even under a circle drawn above it.
    map.addEventListener("click", (event) => {
      const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(
        map.getScreenCTM().inverse(),
      );
      let nearest = -1;
      let nearestDistance = Infinity;
      discs.forEach((disc, index) => {
        const distance = Math.hypot(point.x - disc.x, point.y - disc.y);
        if (distance <= disc.r && distance < nearestDistance) {
          nearest = index;
          nearestDistance = distance;
        }
      });
      if (nearest >= 0) select(nearest);
    });
  }

  function fillTopicTable() {
    const headings = ["topic", "prevalence", "NPMI", "exclusive"];
    if (data.stability) headings.push("distance");
    headings.push("most probable words");
    const header = document.querySelector("#topics thead tr");
    headings.forEach((heading, column) =>
      header.append(
        html("th", {
          textContent: heading,
          className: column && column < headings.length - 1 ? "number" : "",
        }),
      ),
    );
    const body = document.querySelector("#topics tbody");
    topics.forEach((topic, index) => {
      const cells = [
        String(index),
        percent(topic.prevalence),
        topic.coherence.toFixed(3),
        percent(topic.exclusivity),
      ];
      if (data.stability) cells.push(topic.distance.toFixed(3));
      const row = html(
        "tr",
        {},
        cells.map((text, column) =>
          html("td", { textContent: text, className: column ? "number" : "" }),
        ),
      );
      row.append(html("td", { textContent: topWords(topic, TABLE_WORDS) }));
      row.dataset.topic = index;
      if (topic.unstable) row.classList.add("unstable");
      row.addEventListener("click", () => select(index));
      body.append(row);
    });
  }

  function showWords() {
    const topic = topics[selected];
    const ranked = rankedWords(topic, lambda);
    const heaviest = Math.max(...ranked.map((entry) => entry.weight));
    const rows = ranked.map((entry) => {
      const name = vocabulary.names[entry.word];
      const word = html("td", { className: "word", textContent: name });
      if (vocabulary.others) {
        word.classList.add("hashed");
        word.title =
          `${percent(vocabulary.share[entry.word])} of its bucket's tokens` +
          (vocabulary.others[entry.word]
            ? `; the bucket also holds: ${vocabulary.others[entry.word]}`
            : "");
      }
      const bar = html("td", { className: "bar" }, [html("span")]);
      bar.firstChild.style.width = percent(entry.weight / heaviest);
      const row = html("tr", {}, [
        word,
        html("td", { className: "number", textContent: entry.weight.toPrecision(3) }),
        bar,
        html("td", {
          className: "number",
          textContent: vocabulary.count[entry.word].toLocaleString("en"),
        }),
        html("td", { className: "number", textContent: entry.relevance.toFixed(2) }),
      ]);
      row.dataset.word = name;
      return row;
    });
    document.querySelector("#words tbody").replaceChildren(...rows);
  }

  function showDocuments() {
    const items = topics[selected].documents.map(([row, share]) => {
      const text = data.documents ? data.documents[row] : `document ${row}`;
      const item = html("li", {}, [
        html("span", { className: "share", textContent: percent(share) }),
        text,
      ]);
      item.dataset.document = row;
      item.title = `document ${row}`;
      return item;
    });
    document.getElementById("documents").replaceChildren(...items);
  }

  function showTopicStats() {
    const topic = topics[selected];
    document.getElementById("topic-title").textContent = `Topic ${selected}`;
    let stats =
      `Prevalence ${percent(topic.prevalence)}, NPMI coherence ` +
      `${topic.coherence.toFixed(3)}, ${percent(topic.exclusivity)} of its top ` +
      `${data.diversityTopN} words in no other topic's.`;
    if (data.stability) {
      stats +=
        ` Mean distance to its closest topic of the other fits: ` +
        `${topic.distance.toFixed(3)}` +
        (topic.unstable ? " (unstable)." : ".");
    }
    document.getElementById("topic-stats").textContent = stats;
  }

  function drawTimeline() {
    if (!data.timeline) return;
    const section = document.getElementById("timeline");
    section.hidden = false;
    const chart = document.getElementById("timeline-chart");
    chart.setAttribute("viewBox", `0 0 ${TIMELINE_WIDTH} ${TIMELINE_HEIGHT}`);
    chart.replaceChildren();
    const { labels, prevalence, alarms } = data.timeline;
    const margin = TIMELINE_MARGIN;
    const width = TIMELINE_WIDTH - margin.left - margin.right;
    const height = TIMELINE_HEIGHT - margin.top - margin.bottom;
    const highest = Math.max(...prevalence.flat(), 1e-9);
    const x = (slice) =>
      margin.left +
      (labels.length > 1 ? (width * slice) / (labels.length - 1) : width / 2);
    const y = (value) => margin.top + height * (1 - value / highest);
    chart.append(
      svg("line", {
        class: "axis",
        x1: margin.left,
        x2: margin.left + width,
        y1: y(0),
        y2: y(0),
      }),
      svg("text", { x: 4, y: y(highest) + 4 }, percent(highest)),
      svg("text", { x: 4, y: y(0) }, "0%"),
    );
    const every = Math.ceil(labels.length / 12);
    labels.forEach((label, slice) => {
      if (slice % every === 0) {
        chart.append(
          svg(
            "text",
            { x: x(slice), y: y(0) + 16, "text-anchor": "middle" },
            label,
          ),
        );
      }
    });
    alarms.forEach((slice) => {
      chart.append(
        svg("line", {
          class: "alarm",
          x1: x(slice),
          x2: x(slice),
          y1: margin.top,
          y2: y(0),
        }),
        svg(
          "text",
          { class: "alarm", x: x(slice) + 3, y: margin.top + 10 },
          "drift alarm",
        ),
      );
    });
    const order = topics.map((topic, index) => index).filter((t) => t !== selected);
    order.push(selected);
    order.forEach((topic) => {
      const points = prevalence
        .map((row, slice) => `${x(slice).toFixed(1)},${y(row[topic]).toFixed(1)}`)
        .join(" ");
      const line = svg("polyline", { points: points, "data-topic": topic });
      if (topic === selected) line.classList.add("selected");
      line.append(svg("title", {}, `topic ${topic}`));
      chart.append(line);
    });
  }

  function select(index) {
    selected = index;
    document
      .querySelectorAll("#topic-map circle, #topics tbody tr")
      .forEach((node) =>
        node.classList.toggle("selected", Number(node.dataset.topic) === index),
      );
    showTopicStats();
    showWords();
    showDocuments();
    drawTimeline();
  }

  const control = document.getElementById("lambda");
  const shown = document.getElementById("lambda-value");
  control.value = Math.round(100 * lambda);
  shown.textContent = lambda.toFixed(2);
  control.addEventListener("input", () => {
    lambda = Number(control.value) / 100;
    shown.textContent = lambda.toFixed(2);
    showWords();
  });

  writeSummary();
  drawMap();
  fillTopicTable();
  select(selected);
  window.reportReady = true;
  window.reportReadyTime = performance.now();
})();
