// The task list's search box and filters. They live in the URL fragment
// (#/tasks?q=...&status=4), so a filtered view can be bookmarked; never a token there.

import { call } from "./api.js";
import { el, stamp } from "./dom.js";
import { TASK_STATUSES } from "./labels.js";
import { go } from "./route.js";

export const FILTERS = ["q", "task_type", "status", "user_id", "label", "created_from", "created_to", "failed_items"];

export function pick(params) {
  return Object.fromEntries(FILTERS.map((key) => [key, params[key]]).filter(([, v]) => v));
}

export function filterForm(params) {
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

  const field = (label, input, wide) => el("label", { class: `field${wide ? " search" : ""}` }, el("span", { text: label }), input);
  const text = (name, placeholder) => el("input", { name, type: "text", placeholder, value: params[name] ?? "" });
  // Text, not datetime-local: the browser would show that in its locale's format (AM/PM in
  // en-US), not the one every time on these pages has.
  const zone = stamp(new Date())[1].split(" ")[1];
  const time = (name) => el("input", { name, type: "text", class: "when", value: toLocalInput(params[name]),
    placeholder: `YYYY-MM-DD HH:MM (${zone})`, title: `24-hour, in this browser's time zone (${zone})` });
  const search = el("input", { name: "q", id: "f-q", type: "search", maxlength: "256", value: params.q ?? "",
    placeholder: "task id (or its start), type, label, message" });

  const form = el("form", { class: "filters", role: "search" },
    field("Search", search, true),
    field("Type", typeSelect),
    field("Status", statusSelect),
    field("Owner", text("user_id", "user id")),
    field("Label", text("label", "key=value")),
    field("Created from", time("created_from")),
    field("Created before", time("created_to")),
    // Tasks that ended with items failed within a for_each step's budget (docs/fan-out.md).
    el("label", { class: "field check" }, el("span", { text: "Failed items" }),
      el("input", { name: "failed_items", id: "f-failed-items", type: "checkbox", value: "true",
        checked: params.failed_items === "true" })),
    el("div", { class: "filter-buttons" },
      el("button", { type: "submit", class: "primary", text: "Filter" }),
      el("button", { type: "button", text: "Clear", onclick: () => go("tasks", "", {}) })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    for (const key of ["created_from", "created_to"]) {
      const input = form.elements[key];
      data[key] = fromLocalInput(data[key]);
      input.setCustomValidity(data[key] === null ? `Write it as ${input.placeholder}, e.g. 2026-01-31 14:05` : "");
      if (data[key] === null) { input.reportValidity(); return; }
    }
    data.q = data.q.trim();
    go("tasks", "", pick(data)); // a new filter starts again at the newest page
  });
  return form;
}

// The inputs read and write local time as "YYYY-MM-DD HH:MM:SS"; the URL and the API take
// epoch seconds. A date alone means its midnight.
function toLocalInput(epoch) {
  if (!epoch || Number.isNaN(Number(epoch))) return "";
  const [day, clock] = stamp(new Date(Number(epoch) * 1000));
  return `${day} ${clock.split(" ")[0]}`;
}

// Epoch seconds as text, "" for an empty input, null for one that is not a time.
function fromLocalInput(value) {
  const text = (value ?? "").trim();
  if (!text) return "";
  const parts = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text);
  if (!parts) return null;
  const [year, month, day, hour, minute, second] = parts.slice(1).map((p) => Number(p ?? 0));
  const date = new Date(year, month - 1, day, hour, minute, second);
  return date.getMonth() === month - 1 && hour < 24 && minute < 60 && second < 60 ? String(date.getTime() / 1000) : null;
}
