// Small pieces more than one view shows: a status badge, label chips, an error banner.

import { el } from "./dom.js";
import { LEGEND } from "./labels.js";

export function badge(status) {
  return el("span", { class: `badge ${status.css}`, title: `${status.code} ${status.name}` },
    el("span", { class: "dot", "aria-hidden": "true" }), status.label);
}

export function labels(map) {
  return el("span", { class: "chips" },
    Object.entries(map ?? {}).map(([key, value]) => el("span", { class: "chip", text: `${key}=${value}` })));
}

export function errorBanner(error) {
  const text = error.describe ? error.describe() : String(error);
  return el("div", { class: "banner error", role: "alert", text });
}

// What each step colour means (the timeline's nodes and the list's progress segments).
export function legend() {
  return el("ul", { class: "legend", "aria-label": "Step colours" }, LEGEND.map(([css, text]) =>
    el("li", {}, el("span", { class: `swatch ${css}`, "aria-hidden": "true" }), text)));
}
