// The search box: find points by index or by their hover text and select them.
import { h } from "./dom.js";

/**
 * Indices of the points `query` names: a list of indices ("12, 40 41"), or
 * else the points whose hover text contains it (ignoring case).
 */
export function searchPoints(query, n, hoverText = []) {
  const q = String(query ?? "").trim();
  if (!q) return new Uint32Array(0);
  if (/^[\d\s,]+$/.test(q)) {
    const wanted = q.split(/[\s,]+/).filter(Boolean).map(Number).filter((i) => i < n);
    return Uint32Array.from(new Set(wanted)).sort();
  }
  const needle = q.toLowerCase();
  const hits = [];
  for (let i = 0; i < Math.min(n, hoverText.length); i++) {
    if (String(hoverText[i]).toLowerCase().includes(needle)) hits.push(i);
  }
  return Uint32Array.from(hits);
}

/** A search field; `onFound(indices, query)` gets the matches on Enter. */
export function createSearch(model, disposer, onFound) {
  const input = h("input", {
    type: "search", "data-role": "search", placeholder: "find: index or text",
    title: "Select the points with these indices (12, 40) or whose hover text contains this; Enter searches",
  });
  disposer.listen(input, "keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    onFound(searchPoints(input.value, model.get("n_points") ?? 0, model.get("hover_text") ?? []), input.value.trim());
  });
  return input;
}
