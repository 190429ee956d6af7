// The task list: search and filters (filters.js), how many tasks match in each status, status
// at a glance, newest first, an "older" link per cursor page. The cursor lives in the URL
// fragment too, so the browser's Back goes to the newer page.

import { call, query } from "./api.js";
import { el, replace, when, duration, shortId, nowText } from "./dom.js";
import { TASK_STATUSES, FINAL, taskStatus, stepState } from "./labels.js";
import { badge, labels, errorBanner, legend } from "./widgets.js";
import { filterForm, pick } from "./filters.js";
import { bulkPanel } from "./bulk.js";
import { poller } from "./poll.js";
import { go, hashFor } from "./route.js";

const PAGE_SIZE = 25;
const REFRESH_MS = 3000;
// A search is a scan of every task (no index holds substrings): refreshed less often.
const SEARCH_REFRESH_MS = 15000;

export function showTasks(root, _arg, params) {
  const results = el("section", { class: "results", "aria-live": "polite" });
  const counts = el("nav", { class: "counts", "aria-label": "Tasks per status" });
  const stamp = el("span", { class: "muted small" });
  replace(root,
    el("div", { class: "title-row" }, el("h1", { text: "Tasks" }), stamp),
    filterForm(params),
    bulkPanel(params, () => { shown = ""; polling.kick(); }),
    counts,
    results);
  let shown = "";
  const every = params.q ? SEARCH_REFRESH_MS : REFRESH_MS;
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
      ? `auto-refresh every ${every / 1000} s · updated ${nowText()}`
      : `updated ${nowText()}`;
    const fingerprint = JSON.stringify(page);
    if (fingerprint !== shown) { // re-draw only on change: no flicker, hover and focus kept
      shown = fingerprint;
      replace(counts, ...statusCounts(page, params));
      replace(results, el("div", { class: "table-fit" }, table(page.items)), pager(page.next_cursor, params), legend());
    }
    // The first page also picks up new tasks; an older page only changes while tasks on it run.
    return running || !params.cursor;
  };
  const polling = poller(refresh, every);
  polling.start();
  return polling;
}

// "12 tasks match · Succeeded 7 · Running 1 ...": each a link that narrows the list to it.
function statusCounts(page, params) {
  const same = { ...pick(params), status: undefined };
  const filtered = Object.keys(pick(params)).length > 0;
  return [
    el("a", { href: hashFor("tasks", "", same), class: `count total${params.status ? "" : " current"}` },
      el("strong", { class: "n", text: String(page.total) }),
      ` ${page.total === 1 ? "task" : "tasks"}${filtered ? " match" : ""}`),
    TASK_STATUSES.map((status) => {
      const n = page.counts[status.name] ?? 0;
      const current = params.status === String(status.code) || params.status === status.name;
      return el("a", {
        href: hashFor("tasks", "", { ...same, status: String(status.code) }),
        class: `count ${current ? "current" : ""}${n ? "" : " none"}`, dataset: { status: status.name },
      }, el("span", { class: `badge ${status.css}` }, el("span", { class: "dot", "aria-hidden": "true" }), status.label),
      el("strong", { class: "n", text: String(n) }));
    }),
  ];
}

const COLUMNS = [["Status", "c-status"], ["Task", "c-task"], ["Steps", "c-steps"], ["Owner", "c-owner"],
  ["Labels", "c-labels"], ["Created", "c-created"], ["Took", "c-took"], ["Message", "c-message"]];

function table(tasks) {
  if (!tasks.length) return el("p", { class: "empty", text: "No tasks match these filters." });
  const head = el("thead", {}, el("tr", {}, COLUMNS.map(([h, css]) => el("th", { class: css, text: h }))));
  const rows = tasks.map((task) => {
    const status = taskStatus(task);
    const href = hashFor("task", task.TaskId);
    return el("tr", { class: "task-row", dataset: { taskId: task.TaskId }, onclick: (event) => {
      if (!event.target.closest("a")) go("task", task.TaskId, {});
    } },
      el("td", { class: "c-status" }, badge(status),
        task.ScheduledFor ? el("div", { class: "starts muted small" }, "starts at ", when(task.ScheduledFor)) : null),
      el("td", { class: "c-task" }, el("a", { href, class: "task-link" },
        el("span", { class: "type", text: task.TaskType }),
        el("code", { class: "id", title: task.TaskId, text: shortId(task.TaskId) }))),
      el("td", { class: "c-steps" }, progress(task)),
      el("td", { class: "c-owner", text: task.UserId ?? "" }),
      el("td", { class: "c-labels" }, labels(task.Labels)),
      el("td", { class: "c-created" }, when(task.TimeCreate)),
      el("td", { class: "c-took num", text: duration(task.TimeStart, task.TimeEnd, FINAL.has(task.TaskStatus)) }),
      el("td", { class: "c-message message", title: task.TaskMessage, text: task.TaskMessage }));
  });
  return el("table", { class: "tasks" }, head, el("tbody", {}, rows));
}

function progress(task) {
  // A delayed task has dispatched step 0 (so it reads "running"), but nothing runs until its start.
  const states = task.StepStates.map((state, index) => (!task.ScheduledFor ? state : index ? "waiting" : "scheduled"));
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
