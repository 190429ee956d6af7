// Plan a task before submitting it (POST /tasks with dry_run): pick a task type, give its
// parameters as JSON, and see what it would do — when it would start and why, its steps with
// for_each counts and sub-flows, the locks it would take and who holds them, the modules that
// would serve it and whether they are live. Nothing is created.

import { call } from "./api.js";
import { el, replace, when } from "./dom.js";
import { errorBanner } from "./widgets.js";

// As the plan says it: what holds the start first gives its words (a gate added later too).
function startText(start) {
  const text = start.text || start.when;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function showPlan(root, _arg, params) {
  const type = el("select", { name: "task_type", id: "plan-type", required: "" });
  const parameters = el("textarea", { name: "parameters", id: "plan-parameters", rows: "6", spellcheck: "false",
    placeholder: '{"name": "app_db"}' });
  parameters.value = params.parameters ?? "{}";
  const startAt = el("input", { name: "start_at", id: "plan-start-at", placeholder: "ISO-8601 or epoch seconds" });
  const afterTask = el("input", { name: "after_task", id: "plan-after-task", placeholder: "task id or idempotency key" });
  const result = el("section", { id: "plan-result", "aria-live": "polite" });
  const form = el("form", { class: "card plan-form" },
    el("label", { class: "field" }, el("span", { text: "Task type" }), type),
    el("label", { class: "field wide" }, el("span", { text: "Parameters (JSON object)" }), parameters),
    el("div", { class: "plan-row" },
      el("label", { class: "field" }, el("span", { text: "Start at (optional)" }), startAt),
      el("label", { class: "field" }, el("span", { text: "After task (optional)" }), afterTask)),
    el("button", { type: "submit", class: "primary", id: "plan-go", text: "Plan it" }),
    el("p", { class: "muted small", text: "A plan creates nothing: no task, no message, no lock." }));
  replace(root, el("div", { class: "title-row" }, el("h1", { text: "Plan a task" })), form, result);

  call("GET", "/task-types").then((list) => {
    for (const item of list.items) type.append(el("option", { value: item.name, text: item.name }));
    if (params.type) type.value = params.type;
  }).catch((error) => replace(result, errorBanner(error)));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let given;
    try {
      given = JSON.parse(parameters.value || "{}");
    } catch {
      replace(result, el("div", { class: "banner error", role: "alert", text: "Parameters: not JSON" }));
      return;
    }
    const body = { task_type: type.value, parameters: given, dry_run: true };
    if (startAt.value.trim()) body.start_at = /^\d+(\.\d+)?$/.test(startAt.value.trim()) ? Number(startAt.value) : startAt.value.trim();
    if (afterTask.value.trim()) body.after_task = afterTask.value.trim();
    try {
      replace(result, planView(await call("POST", "/tasks", body)));
    } catch (error) {
      replace(result, errorBanner(error));
    }
  });
  return { stop() {} };
}

function planView(plan) {
  const start = el("div", { class: "card", id: "plan-start" },
    el("h2", { text: `Starts: ${startText(plan.start)}` }),
    plan.start.at ? el("p", {}, "Start time: ", when(plan.start.at)) : null,
    el("ul", {}, plan.start.reasons.map((reason) => el("li", { text: reason }))),
    plan.existing_task_id ? el("p", { class: "banner info",
      text: `The idempotency key names task ${plan.existing_task_id}: submitting would answer it, not create one.` }) : null);
  const warnings = plan.warnings.length ? el("div", { class: "banner error", role: "alert", id: "plan-warnings" },
    el("ul", {}, plan.warnings.map((warning) => el("li", { text: warning })))) : null;
  return el("div", {}, start, warnings,
    el("h2", { text: "Steps" }), stepsTable(plan.steps),
    plan.locks.length ? el("h2", { text: "Locks" }) : null, plan.locks.length ? locksTable(plan.locks) : null,
    el("h2", { text: "Modules" }), modulesTable(plan.modules));
}

function stepsTable(steps, depth = 0) {
  const rows = [];
  const add = (step, level) => {
    // Another kind (an approval step) as it describes itself.
    const what = step.normal ? `${step.normal.module}.${step.normal.command}`
      : step.sub_flow ? `sub-flow ${step.sub_flow.task_type}` : step.note ?? "";
    const fanOut = step.for_each ? `${step.for_each.items ?? "?"} items of ${step.for_each.parameter}` +
      (step.for_each.max_parallel ? `, ${step.for_each.max_parallel} at a time` : "") +
      (step.for_each.tolerate ? `, tolerates ${step.for_each.tolerate} failing` : "") +
      (step.for_each.on_failure === "hold" ? ", holds at a failure" : "") : "";
    rows.push(el("tr", { dataset: { step: step.name } },
      el("td", { class: `depth-${Math.min(level, 3)}`, text: step.name }), // a sub-flow's steps indented
      el("td", { text: what }),
      el("td", { text: step.normal?.kind ?? "" }),
      el("td", { text: step.after.join(", ") || (level ? "" : "first") }),
      el("td", { text: fanOut }),
      el("td", { text: step.rollback ? `${step.rollback.module}.${step.rollback.command}` : "—" }),
      el("td", { text: step.lock_key ?? "" })));
    for (const child of step.sub_flow?.steps ?? []) add(child, level + 1);
  };
  for (const step of steps) add(step, depth);
  return el("table", { class: "plan", id: "plan-steps" },
    el("thead", {}, el("tr", {}, ["Step", "Runs", "Kind", "After", "For each", "Rollback", "Step lock"].map((h) => el("th", { text: h })))),
    el("tbody", {}, rows));
}

function locksTable(locks) {
  return el("table", { class: "plan", id: "plan-locks" },
    el("thead", {}, el("tr", {}, ["Key", "Taken by", "Mode", "Limit", "Now"].map((h) => el("th", { text: h })))),
    el("tbody", {}, locks.map((lock) => el("tr", {},
      el("td", { text: lock.key }), el("td", { text: lock.scope === "task" ? "the task" : `step ${lock.scope}` }),
      el("td", { text: lock.mode }), el("td", { text: lock.limit }),
      el("td", { text: lockNow(lock) })))));
}

// Free, shared with its holders (their modes let this one in), or held and who waits.
function lockNow(lock) {
  const held = lock.holders.join(", ");
  if (lock.free) return held ? `free to share with ${held}` : "free";
  return `held by ${held || "nobody"}; ${lock.waiting} waiting`;
}

function modulesTable(modules) {
  return el("table", { class: "plan", id: "plan-modules" },
    el("thead", {}, el("tr", {}, ["Module", "Live", "Needs", "Missing"].map((h) => el("th", { text: h })))),
    el("tbody", {}, modules.map((module) => el("tr", {},
      el("td", { text: module.module }),
      el("td", { text: (module.live ? "live" : "not live") + (module.drained ? " · drained" : "") }),
      el("td", { text: module.needed.join(", ") }), el("td", { text: module.missing.join(", ") })))));
}
