// A for_each step's items: its counts by state (each a filter) and its items a page at a time,
// read from GET /tasks/{id}/steps/{step}/items. The task never carries the items of a step kept
// over records (it may have 10,000): only their counts; a page is asked for when shown.

import { call } from "./api.js";
import { el, replace, when, asText } from "./dom.js";
import { errorBanner } from "./widgets.js";

export const PAGE = 25;

// `memory`: the filter and page each step's table shows, kept across redraws of the task.
export function itemTables(task, memory) {
  const steps = task.Steps.map((step, index) => [step, index]).filter(([step]) => step.ItemCounts);
  if (!steps.length) return null;
  return steps.map(([step, index]) => itemTable(task.TaskId, step, index, memory));
}

function itemTable(taskId, step, index, memory) {
  const view = memory.get(index) ?? { state: null, afters: [null] }; // the `after` of each page walked
  memory.set(index, view);
  const total = step.ItemCount ?? (step.Items ?? []).length;
  const filters = el("div", { class: "item-counts", role: "group", "aria-label": `Filter the items of ${step.Name}` });
  const body = el("div", { class: "items-page", "aria-live": "polite" });
  const drawFilters = () => replace(filters, [["all", null, total], ...Object.entries(step.ItemCounts).map(([s, n]) => [s, s, n])]
    .map(([label, state, count]) => el("button", {
      type: "button", class: "item-filter", dataset: { state: state ?? "" }, "aria-pressed": String(view.state === state),
      text: `${label.replaceAll("_", " ")} ${count}`,
      onclick: () => { view.state = state; view.afters = [null]; drawFilters(); load(); },
    })));
  const load = async () => {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (view.state) query.set("state", view.state);
    const after = view.afters[view.afters.length - 1];
    if (after !== null) query.set("after", String(after));
    try {
      const page = await call("GET", `/tasks/${encodeURIComponent(taskId)}/steps/${index}/items?${query}`);
      replace(body, table(page), nav(page, view, load));
    } catch (error) {
      replace(body, errorBanner(error));
    }
  };
  drawFilters();
  load();
  return el("div", { class: "items", dataset: { step: String(index) } },
    el("h3", { text: `${step.Name}: ${total} items` }), filters, body);
}

function table(page) {
  if (!page.Items.length) return el("p", { class: "muted", text: "No items here." });
  const head = ["Item", "State", "Value", "Attempts", "Started", "Ended", "Message"];
  return el("div", { class: "table-fit" }, el("table", { class: "items-table" },
    el("thead", {}, el("tr", {}, head.map((name) => el("th", { scope: "col", text: name })))),
    el("tbody", {}, page.Items.map((item) => el("tr", { dataset: { item: String(item.Item), state: item.State } },
      el("td", { class: "c-item", text: String(item.Item) }),
      el("td", { class: "c-state", text: item.State.replaceAll("_", " ") }),
      el("td", { class: "c-value" }, el("code", { text: asText(item.Value) })),
      el("td", { text: String(item.Attempts) }),
      el("td", {}, when(item.TimeStart)),
      el("td", {}, when(item.TimeEnd)),
      el("td", { class: "c-message", text: [item.Message, item.RollbackMessage].filter(Boolean).join(" · ") }))))));
}

function nav(page, view, load) {
  const first = page.Items.length ? page.Items[0].Item : null;
  const last = page.Items.length ? page.Items[page.Items.length - 1].Item : null;
  return el("div", { class: "items-nav" },
    el("span", { class: "muted", text: first === null ? "" : `items ${first}–${last}` }),
    el("button", { type: "button", class: "items-first", disabled: view.afters.length === 1 ? "" : null, text: "First page",
      onclick: () => { view.afters = [null]; load(); } }),
    el("button", { type: "button", class: "items-next", disabled: page.NextAfter === null ? "" : null, text: "Next",
      onclick: () => { view.afters.push(page.NextAfter); load(); } }));
}
