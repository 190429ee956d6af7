// A task's steps as a timeline. Each step says how its normal phase ended and, when it was
// undone, how its rollback ended: the step that failed reads "failed → rolled back", the ones
// undone after it "succeeded → rolled back". Under each phase, every attempt of the current
// run with its times, duration and error (the API derives them from the history).

import { el, when, duration } from "./dom.js";
import { FINAL, failedHere, shownState, phaseOutcome } from "./labels.js";
import { legend } from "./widgets.js";

export function timeline(task) {
  return [
    // A retry runs the flow again: the steps show this run; the history keeps the earlier ones.
    task.Generation ? el("p", { class: "muted small run-note",
      text: `Run ${task.Generation + 1}: the attempts of earlier runs are in the history below.` }) : null,
    el("ol", { class: "timeline" }, task.Steps.map((step, index) => stepItem(task, step, index))),
    legend(),
  ];
}

function stepItem(task, step, index) {
  // The step's runs in flight: one for a plain step, one per running item of a for_each step
  // (those of items kept in records come apart, in `ItemRuns`).
  const runs = [...(task.Runs ?? []), ...(task.ItemRuns ?? [])].filter((run) => run.Cursor === index);
  const active = runs.length ? runs[0] : null;
  const inPhase = (phase) => runs.filter((run) => run.Phase === phase);
  const scheduled = Boolean(task.ScheduledFor) && active !== null;
  const state = scheduled ? { label: "scheduled", css: "st-scheduled" } : shownState(step);
  const normal = phaseOutcome("normal", step.Code);
  const undone = step.RollbackModule === null && !step.Flow ? null : phaseOutcome("rollback", step.RollbackCode);
  const failed = failedHere(step);
  const ended = FINAL.has(task.TaskStatus);
  const items = step.Items && step.Items.length ? step.Items.length : step.ItemCount ?? 0;
  const attempts = (task.Attempts ?? []).filter((a) => a.Run === task.Generation && a.Cursor === index);
  return el("li", {
    class: `step ${failed ? "st-failed failed-here" : state.css}`,
    dataset: { step: String(index), state: step.State, ...(failed ? { failed: "true" } : {}) },
  },
  el("div", { class: "step-head" },
    el("span", { class: "step-index", text: String(index) }),
    el("span", { class: "step-name", text: step.Name }),
    outcomeBadges(state, normal, undone, step.State),
    failed ? el("span", { class: "failed-flag", text: "✖ the step that failed" }) : null),
  progressNotes(step),
  waveNote(step),
  phaseRow("normal", {
    module: step.NormalModule ?? "sub-flow", command: step.NormalCommand ?? step.Flow, outcome: normal,
    message: step.Message,
    start: step.TimeStart, end: step.TimeEnd, attempts: step.Attempts, retry: step.NormalRetry, items, ended,
    checking: (run) => waitingUnits(step).some(([, item]) => item === (run.Item ?? null)),
    waits: task.RunWaits ?? {},
  }, inPhase(0), attempts.filter((a) => a.Phase === 0), scheduled && task.ScheduledFor),
  step.RollbackModule === null && !step.Flow
    ? el("div", { class: "phase phase-rollback none" },
      el("span", { class: "phase-marker", "aria-hidden": "true", text: "↺" }),
      el("span", { class: "phase-name", text: "rollback" }),
      el("span", { class: "muted", text: "none declared: passed over when rolling back" }))
    : phaseRow("rollback", {
      module: step.RollbackModule ?? "sub-flow", command: step.RollbackCommand ?? `undo ${step.Flow}`, outcome: undone,
      message: step.RollbackMessage, start: step.RollbackTimeStart, end: step.RollbackTimeEnd,
      attempts: step.RollbackAttempts, retry: step.RollbackRetry ?? 0, items, ended,
      checking: (run) => waitingUnits(step).some(([, item]) => item === (run.Item ?? null)),
      waits: task.RunWaits ?? {},
    }, inPhase(1), attempts.filter((a) => a.Phase === 1), null));
}

// The step's story in badges: how its normal phase ended, then what became of it (how its
// rollback ended, or: skipped, compensated...). A step still on its way shows its state.
function outcomeBadges(state, normal, undone, stateName) {
  const badge = (what, cls) => el("span", { class: `badge ${what.css} ${cls}` },
    el("span", { class: "dot", "aria-hidden": "true" }), what.label);
  if (!normal || stateName === "running") return el("span", { class: "outcome-badges" }, badge(state, "state"));
  const parts = [badge(normal, "normal-outcome")];
  if (["rolled_back", "rollback_failed"].includes(stateName) && undone) parts.push(" → ", badge(undone, "rollback-outcome"));
  else if (!["succeeded", "failed"].includes(stateName)) parts.push(" → ", badge(state, "state"));
  return el("span", { class: "outcome-badges" }, parts);
}

function phaseRow(phase, run, inFlight, attempts, startsAt) {
  const active = inFlight.length ? inFlight[0] : null;
  const ran = run.start !== null || run.attempts > 0 || (active && !startsAt);
  return el("div", { class: `phase phase-${phase}${ran ? "" : " not-run"}`, dataset: { phase } },
    el("span", { class: "phase-marker", "aria-hidden": "true", text: phase === "normal" ? "▶" : "↺" }),
    el("span", { class: "phase-name", text: phase }),
    el("code", { class: "phase-command", text: `${run.module} · ${run.command}` }),
    ran
      ? el("span", { class: "phase-times" },
        when(run.start), " → ", when(run.end),
        el("span", { class: "took", text: duration(run.start, run.end, run.ended) }))
      : el("span", { class: "muted", text: startsAt ? "not run yet" : "not run" }),
    // A for_each step's attempts are its items' together (each may take 1 + retries).
    run.items
      ? el("span", { class: "attempts", title: `attempts started by its items, each allowed ${run.retry + 1}`,
        text: `attempts ${run.attempts} over ${run.items} items` })
      : el("span", { class: "attempts", title: "attempts started / allowed (1 + retries)",
        text: `attempts ${run.attempts}/${run.retry + 1}` }),
    run.outcome ? el("span", { class: `code ${run.outcome.css}`, text: run.outcome.label }) : null,
    startsAt ? el("span", { class: "active-run scheduled" }, "scheduled: starts at ", when(startsAt))
      : active ? activeRun(active, inFlight.length, run.checking, run.waits) : null,
    ...attemptsAndMessage(attempts, run.message, run.ended));
}

// One attempt that ended as the phase did: its message is the phase's. Otherwise every attempt,
// and the phase's message too when it is not the last attempt's (compensated by hand, say).
function attemptsAndMessage(attempts, message, ended) {
  const list = attempts.length > 1 || (attempts.length === 1 && attempts[0].Message !== message)
    ? attemptList(attempts, ended) : null;
  const last = attempts.length ? attempts[attempts.length - 1].Message : null;
  const text = message && (!list || message !== last) ? el("pre", { class: "phase-message", text: message }) : null;
  return [list, text];
}

// Every attempt of one phase: when, how long, how it ended, its error.
function attemptList(attempts, ended) {
  return el("ol", { class: "attempt-list" }, attempts.map((a) => el("li", {
    class: `attempt outcome-${a.Outcome.replace(/[^a-z]+/g, "-")}`, dataset: { attempt: String(a.Attempt) },
  },
  el("span", { class: "attempt-no", text: `${a.Item === null || a.Item === undefined ? "" : `item ${a.Item} · `}attempt ${a.Attempt}` }),
  el("span", { class: "phase-times" }, when(a.TimeStart), " → ", when(a.TimeEnd)),
  el("span", { class: "took", text: duration(a.TimeStart, a.TimeEnd, ended) }),
  el("span", { class: "attempt-outcome", text: a.Outcome }),
  a.Worker ? el("span", { class: "muted small", text: `on ${a.Worker}` }) : null,
  a.Message ? el("pre", { class: "phase-message", text: a.Message }) : null)));
}

// What the run in flight does: what its step's kind or a gate says it waits for (`RunWaits`, as the
// API serves it: a child task, the step's lock, a drained module), else running or dispatched.
function activeRun(active, count, checking, waits) {
  const item = active.Item === null || active.Item === undefined ? "" : `item ${active.Item}: `;
  const more = count > 1 ? ` (+${count - 1} more items in flight)` : "";
  const said = waits && waits[active.DispatchId];
  const text = said
    ? `${item}${said}${more}`
    : active.State === "waiting_rate"  // the step rate's words until its gate says them (RunWaits)
      ? `${item}attempt ${active.Attempt} waiting for a start slot of the step's rate${more}`
      : active.State === "running"
      ? `${item}running attempt ${active.Attempt} on ${active.Owner ?? "?"}${more}`
      : checking && checking(active)
        ? `${item}not done yet: checks again later${more}`
        : `${item}dispatched, attempt ${active.Attempt}: waiting for a worker${more}`;
  return el("span", { class: "active-run", text });
}

// "Check again later": the units (the step, or items of a for_each step) whose command answered
// "not done yet", with its latest progress and since when the phase waits.
function waitingUnits(step) {
  const units = step.Items && step.Items.length ? step.Items.map((unit, i) => [unit, i]) : [[step, null]];
  return units.filter(([unit]) => unit.WaitingSince !== null && unit.WaitingSince !== undefined);
}

// A for_each step in waves (docs/fan-out.md, "Waves"): which wave, what it waits for, and each
// ended wave's items done and failed.
function waveNote(step) {
  const wave = step.Wave;
  if (!wave) return null;
  // Over a source with pages left, the waves are fixed as the pages come: their number is not known.
  const growing = step.Paging && !step.Paging.Done;
  const where = growing ? `wave ${wave.Index + 1}` : `wave ${wave.Index + 1} of ${wave.Ends.length}`;
  const phase = wave.Phase === "paused" ? [`${where} ended: waits for an operator's continue`]
    : wave.Phase === "baking" ? [`${where} ended: baking until `, when(wave.Until)]
      : wave.Phase === "checking" ? [`${where} ended: its check runs as task ${wave.Check}`]
        : wave.Index >= wave.Ends.length ? [`${where} waits for its source's count`] : [`${where} running`];
  const tallies = (wave.Tallies ?? []).map(([done, failed], i) =>
    `wave ${i + 1}: ${done} done${failed ? `, ${failed} failed` : ""}`).join(" · ");
  return el("div", { class: "wave-note", dataset: { phase: wave.Phase } },
    el("span", { class: "wave-where" }, ...phase),
    tallies ? el("span", { class: "muted small", text: ` (${tallies})` }) : null);
}

function progressNotes(step) {
  const waiting = waitingUnits(step);
  if (!waiting.length) return null;
  return el("ul", { class: "progress-notes" }, waiting.map(([unit, item]) => el("li", {
    class: "progress-note", dataset: { item: item === null ? "" : String(item) },
  },
  el("span", { class: "muted small", text: `${item === null ? "" : `item ${item} · `}not done yet, waiting since ` }),
  when(unit.WaitingSince), " ",
  unit.Progress ? el("span", { class: "progress-text", text: unit.Progress }) : null)));
}
