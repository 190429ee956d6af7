// A task's steps as a timeline (each step's normal phase, then its rollback phase, with times,
// attempts and errors) and its event history. Everything comes from the masked task view.

import { el, when, duration } from "./dom.js";
import { stepState, resultCode, PHASES } from "./labels.js";

export function timeline(task) {
  return el("ol", { class: "timeline" }, task.Steps.map((step, index) => stepItem(task, step, index)));
}

function stepItem(task, step, index) {
  const state = stepState(step.State);
  const active = task.Active && task.Active.Cursor === index ? task.Active : null;
  return el("li", { class: `step ${state.css}`, dataset: { step: String(index), state: step.State } },
    el("div", { class: "step-head" },
      el("span", { class: "step-index", text: String(index) }),
      el("span", { class: "step-name", text: step.Name }),
      el("span", { class: `badge ${state.css}` }, el("span", { class: "dot" }), state.label)),
    phaseRow("normal", {
      module: step.NormalModule, command: step.NormalCommand, code: step.Code, message: step.Message,
      start: step.TimeStart, end: step.TimeEnd, attempts: step.Attempts, retry: step.NormalRetry,
    }, active && active.Phase === 0 ? active : null),
    step.RollbackModule === null
      ? el("div", { class: "phase phase-rollback none" },
        el("span", { class: "phase-marker", "aria-hidden": "true", text: "↺" }),
        el("span", { class: "phase-name", text: "rollback" }),
        el("span", { class: "muted", text: "none declared: passed over when rolling back" }))
      : phaseRow("rollback", {
        module: step.RollbackModule, command: step.RollbackCommand, code: step.RollbackCode,
        message: step.RollbackMessage, start: step.RollbackTimeStart, end: step.RollbackTimeEnd,
        attempts: step.RollbackAttempts, retry: step.RollbackRetry,
      }, active && active.Phase === 1 ? active : null));
}

function phaseRow(phase, run, active) {
  const ran = run.start !== null || run.attempts > 0 || active;
  const outcome = resultCode(run.code);
  return el("div", { class: `phase phase-${phase}${ran ? "" : " not-run"}`, dataset: { phase } },
    el("span", { class: "phase-marker", "aria-hidden": "true", text: phase === "normal" ? "▶" : "↺" }),
    el("span", { class: "phase-name", text: phase }),
    el("code", { class: "phase-command", text: `${run.module} · ${run.command}` }),
    ran
      ? el("span", { class: "phase-times" },
        when(run.start), " → ", when(run.end),
        el("span", { class: "took", text: duration(run.start, run.end) }))
      : el("span", { class: "muted", text: "not run" }),
    el("span", { class: "attempts", title: "attempts started / allowed (1 + retries)",
      text: `attempts ${run.attempts}/${run.retry + 1}` }),
    outcome ? el("span", { class: `code code-${run.code === 0 ? "ok" : "bad"}`, text: outcome }) : null,
    active ? activeRun(active) : null,
    run.message ? el("pre", { class: "phase-message", text: run.message }) : null);
}

function activeRun(active) {
  const text = active.State === "running"
    ? `running attempt ${active.Attempt} on ${active.Owner ?? "?"}`
    : `dispatched, attempt ${active.Attempt}: waiting for a worker`;
  return el("span", { class: "active-run", text });
}

const OPERATOR_EVENTS = new Set(["cancel_requested", "cancelled", "retried", "rollback_retried", "compensated"]);

export function history(task) {
  const head = el("thead", {}, el("tr", {},
    ["Time", "+", "Event", "Step", "Phase", "Attempt", "Actor", "Message"].map((h) => el("th", { text: h }))));
  const rows = task.History.map((event) => {
    const step = event.Cursor === null ? null : task.Steps[event.Cursor];
    const kind = OPERATOR_EVENTS.has(event.Event) ? "ev-operator"
      : /fail|lost|died|timed/.test(event.Event) ? "ev-bad" : "";
    return el("tr", { class: kind },
      el("td", { class: "nowrap" }, when(event.Time, true)),
      el("td", { class: "num muted", text: offset(event.Time - task.TimeCreate) }),
      el("td", {}, el("span", { class: "event", text: event.Event })),
      el("td", { class: "nowrap", text: step ? `${event.Cursor} ${step.Name}` : "" }),
      el("td", { text: event.Phase === null ? "" : PHASES[event.Phase] }),
      el("td", { class: "num", text: event.Attempt ?? "" }),
      el("td", { text: event.Actor ?? "" }),
      el("td", { class: "message", text: event.Message }));
  });
  return el("table", { class: "history" }, head, el("tbody", {}, rows));
}

function offset(seconds) {
  return seconds < 60 ? `${seconds.toFixed(2)} s` : `${(seconds / 60).toFixed(1)} min`;
}
