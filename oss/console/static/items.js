// A for_each step's items: its counts by state (each a filter) and its items a page at a time,
// read from GET /tasks/{id}/steps/{step}/items. The task never carries the items of a step kept
// over records (it may have 10,000): only their counts; a page is asked for when shown.

import { call } from "./api.js";
import { el, replace, when, asText } from "./dom.js";
import { errorBanner } from "./widgets.js";
import { FINAL } from "./labels.js";
import { hashFor } from "./route.js";

export const PAGE = 25;

// `memory`: the filter and page each step's table shows, kept across redraws of the task.
export function itemTables(task, memory) {
  const steps = task.Steps.map((step, index) => [step, index]).filter(([step]) => step.ItemCounts);
  if (!steps.length) return null;
  return steps.map(([step, index]) => itemTable(task, step, index, memory));
}

// The "failed" filter: items whose normal phase ended failed, whatever their state now (the item
// that failed a rolled-back task reads "rolled back"): GET ...?failed=true.
const FAILED = "@failed";

// A state as the table says it: an item still waiting in a task that ended never started.
function stateLabel(state, final) {
  return final && state === "waiting" ? "never started" : state.replaceAll("_", " ");
}

function itemTable(task, step, index, memory) {
  const taskId = task.TaskId;
  const final = FINAL.has(task.TaskStatus);
  // A step that ended with failed items (within its budget), or that holds the task, shows those
  // first: they are what an operator looks at; "all" is one click away.
  const withFailed = (step.FailedItems ?? 0) > 0 || task.Held?.Cursor === index;
  const view = memory.get(index) ?? { state: withFailed ? FAILED : null, afters: [null] }; // the `after` of each page walked
  memory.set(index, view);
  const total = step.ItemCount ?? (step.Items ?? []).length;
  const filters = el("div", { class: "item-counts", role: "group", "aria-label": `Filter the items of ${step.Name}` });
  const body = el("div", { class: "items-page", "aria-live": "polite" });
  const button = (label, state, title) => el("button", {
    type: "button", class: "item-filter", dataset: { state: state ?? "" }, "aria-pressed": String(view.state === state),
    text: label, title, onclick: () => { view.state = state; view.afters = [null]; drawFilters(); load(); },
  });
  const failedButton = () => button(withFailed && step.FailedItems ? `failed ${step.FailedItems}` : "failed", FAILED,
    "Items whose normal phase ended failed, whatever became of them since (rolled back, say)");
  const drawFilters = () => replace(filters,
    withFailed ? failedButton() : null,
    button(`all ${total}`, null),
    Object.entries(step.ItemCounts).map(([s, n]) => button(`${stateLabel(s, final)} ${n}`, s)),
    withFailed ? null : failedButton());
  const load = async () => {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (view.state === FAILED) query.set("failed", "true");
    else if (view.state) query.set("state", view.state);
    const after = view.afters[view.afters.length - 1];
    if (after !== null) query.set("after", String(after));
    try {
      const page = await call("GET", `/tasks/${encodeURIComponent(taskId)}/steps/${index}/items?${query}`);
      replace(body, table(page, final), nav(page, view, load));
    } catch (error) {
      replace(body, errorBanner(error));
    }
  };
  // Jump to an item by its index: the page that starts with it (in the filter shown).
  const jump = el("input", { type: "number", min: "0", max: String(Math.max(total - 1, 0)), class: "items-jump",
    "aria-label": `Go to item (0 to ${Math.max(total - 1, 0)})`, placeholder: "item #" });
  const go = el("form", { class: "items-go", onsubmit: (event) => {
    event.preventDefault();
    const at = Number.parseInt(jump.value, 10);
    if (!Number.isInteger(at) || at < 0 || at >= total) return;
    view.afters = [null, ...(at > 0 ? [at - 1] : [])];
    load();
  } }, jump, el("button", { type: "submit", class: "items-go-button", text: "Go" }));
  drawFilters();
  load();
  return el("div", { class: "items", dataset: { step: String(index) } },
    el("h3", { text: `${step.Name}: ${total} items` }), filters, go, body);
}

function table(page, final) {
  if (!page.Items.length) return el("p", { class: "muted", text: "No items here." });
  const head = ["Item", "State", "Value", "Attempts", "Started", "Ended", "Rollback", "Message"];
  return el("div", { class: "table-fit" }, el("table", { class: "items-table" },
    el("thead", {}, el("tr", {}, head.map((name) => el("th", { scope: "col", text: name })))),
    el("tbody", {}, page.Items.map((item) => el("tr", { dataset: { item: String(item.Item), state: item.State } },
      el("td", { class: "c-item" }, String(item.Item),
        // An item of a for_each sub-flow step runs a child task of its own.
        item.ChildTaskId ? el("a", { class: "item-child", href: hashFor("task", item.ChildTaskId), text: " child ↗",
          title: `child task ${item.ChildTaskId}` }) : null),
      el("td", { class: "c-state", text: stateLabel(item.State, final) }),
      el("td", { class: "c-value" }, el("code", { text: asText(item.Value) })),
      el("td", { text: String(item.Attempts) }),
      el("td", {}, when(item.TimeStart)),
      el("td", {}, when(item.TimeEnd)),
      el("td", { class: "c-rollback" }, item.RollbackTimeStart
        ? [when(item.RollbackTimeStart), " → ", when(item.RollbackTimeEnd)] : "—"),
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
