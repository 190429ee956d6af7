// The task list: filters, status at a glance, newest first, an "older" link per cursor page.
// Filters and the cursor live in the URL fragment (#/tasks?status=4&cursor=...), so a filtered
// view can be bookmarked and the browser's Back goes to the newer page. Never a token there.

import { call, query } from "./api.js";
import { el, replace, when, duration, shortId } from "./dom.js";
import { TASK_STATUSES, FINAL, taskStatus, stepState } from "./labels.js";
import { badge, labels, errorBanner } from "./widgets.js";
import { poller } from "./poll.js";
import { go, hashFor } from "./route.js";

const FILTERS = ["task_type", "status", "user_id", "label", "created_from", "created_to"];
const PAGE_SIZE = 25;
const REFRESH_MS = 3000;

export function showTasks(root, _arg, params) {
  const results = el("section", { class: "results", "aria-live": "polite" });
  const stamp = el("span", { class: "muted small" });
  replace(root,
    el("div", { class: "title-row" }, el("h1", { text: "Tasks" }), stamp),
    filterForm(params),
    results);
  let shown = "";
  const refresh = async () => {
    let page;
    try {
      page = await call("GET", "/tasks" + query({ ...pick(params), cursor: params.cursor, limit: params.limit || PAGE_SIZE }));
    } catch (error) {
      replace(results, errorBanner(error));
      return true;
    }
    const running = page.items.some((t) => !FINAL.has(t.TaskStatus));
    stamp.textContent = running || !params.cursor
      ? `auto-refresh every ${REFRESH_MS / 1000} s · updated ${new Date().toLocaleTimeString()}`
      : `updated ${new Date().toLocaleTimeString()}`;
    const fingerprint = JSON.stringify(page);
    if (fingerprint !== shown) { // re-draw only on change: no flicker, hover and focus kept
      shown = fingerprint;
      replace(results, table(page.items), pager(page.next_cursor, params));
    }
    // The first page also picks up new tasks; an older page only changes while tasks on it run.
    return running || !params.cursor;
  };
  const polling = poller(refresh, REFRESH_MS);
  polling.start();
  return polling;
}

function pick(params) {
  return Object.fromEntries(FILTERS.map((key) => [key, params[key]]).filter(([, v]) => v));
}

function filterForm(params) {
  const typeSelect = el("select", { name: "task_type", id: "f-type" }, el("option", { value: "", text: "any type" }));
  // The filtered type is an option at once; the others arrive with /task-types.
  if (params.task_type) typeSelect.append(el("option", { value: params.task_type, text: params.task_type }));
  typeSelect.value = params.task_type ?? "";
  call("GET", "/task-types").then((types) => {
    for (const type of types.items) {
      if (type.name !== params.task_type) typeSelect.append(el("option", { value: type.name, text: type.name }));
    }
  }).catch(() => {}); // the list itself reports what is wrong

  const statusSelect = el("select", { name: "status", id: "f-status" },
    el("option", { value: "", text: "any status" }),
    TASK_STATUSES.map((s) => el("option", { value: String(s.code), text: `${s.code} · ${s.label}` })));
  statusSelect.value = params.status ?? "";

  const field = (label, input) => el("label", { class: "field" }, el("span", { text: label }), input);
  const text = (name, placeholder) => el("input", { name, type: "text", placeholder, value: params[name] ?? "" });
  const time = (name) => el("input", { name, type: "datetime-local", step: "1", value: toLocalInput(params[name]) });

  const form = el("form", { class: "filters", role: "search" },
    field("Type", typeSelect),
    field("Status", statusSelect),
    field("Owner", text("user_id", "user id")),
    field("Label", text("label", "key=value")),
    field("Created from", time("created_from")),
    field("Created before", time("created_to")),
    el("div", { class: "filter-buttons" },
      el("button", { type: "submit", class: "primary", text: "Filter" }),
      el("button", { type: "button", text: "Clear", onclick: () => go("tasks", "", {}) })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    for (const key of ["created_from", "created_to"]) data[key] = fromLocalInput(data[key]);
    go("tasks", "", pick(data)); // a new filter starts again at the newest page
  });
  return form;
}

// datetime-local inputs are in the browser's time zone; the URL and the API take epoch seconds.
function toLocalInput(epoch) {
  if (!epoch || Number.isNaN(Number(epoch))) return "";
  const date = new Date(Number(epoch) * 1000);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

function fromLocalInput(value) {
  const millis = value ? new Date(value).getTime() : NaN;
  return Number.isNaN(millis) ? "" : String(millis / 1000);
}

function table(tasks) {
  if (!tasks.length) return el("p", { class: "empty", text: "No tasks match these filters." });
  const head = el("thead", {}, el("tr", {},
    ["Status", "Task", "Steps", "Owner", "Labels", "Created", "Took", "Message"].map((h) => el("th", { text: h }))));
  const rows = tasks.map((task) => {
    const status = taskStatus(task.TaskStatus, task.CancelRequested);
    const href = hashFor("task", task.TaskId);
    return el("tr", { class: "task-row", dataset: { taskId: task.TaskId }, onclick: (event) => {
      if (!event.target.closest("a")) go("task", task.TaskId, {});
    } },
      el("td", {}, badge(status)),
      el("td", {}, el("a", { href, class: "task-link" },
        el("span", { class: "type", text: task.TaskType }),
        el("code", { class: "id", title: task.TaskId, text: shortId(task.TaskId) }))),
      el("td", {}, progress(task.StepStates)),
      el("td", { text: task.UserId ?? "" }),
      el("td", {}, labels(task.Labels)),
      el("td", { class: "nowrap" }, when(task.TimeCreate)),
      el("td", { class: "num", text: duration(task.TimeStart, task.TimeEnd) }),
      el("td", { class: "message", title: task.TaskMessage, text: task.TaskMessage }));
  });
  return el("table", { class: "tasks" }, head, el("tbody", {}, rows));
}

function progress(states) {
  return el("span", { class: "progress", "aria-label": states.join(", ") },
    states.map((state, index) => el("span",
      { class: `seg ${stepState(state).css}`, title: `step ${index}: ${stepState(state).label}` })));
}

function pager(nextCursor, params) {
  const same = { ...pick(params), limit: params.limit }; // ?limit= (page size) is kept, not a filter
  return el("nav", { class: "pager" },
    params.cursor ? el("a", { class: "newest", href: hashFor("tasks", "", same), text: "⇤ Newest" }) : null,
    nextCursor
      ? el("a", { class: "older", href: hashFor("tasks", "", { ...same, cursor: nextCursor }), text: "Older →" })
      : el("span", { class: "muted", text: "No older tasks." }));
}
