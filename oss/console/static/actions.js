// The operator actions that fit a task's state (common/engine/operator/actions.py decides; the API
// answers 409 for one that does not fit, and the console shows that answer), and the dialog
// that asks for the reason every action records in the task's history.

import { el } from "./dom.js";
import { askReason } from "./dialog.js";

const ACTIONS = {
  cancel: {
    label: "Cancel",
    danger: true,
    help: "The running step finishes, then it and every earlier step are rolled back.",
  },
  // The same POST /cancel, asking for the running commands to be stopped now: for a step that
  // hangs or runs far too long, where a plain cancel would wait for it (up to its timeout).
  "cancel-now": {
    label: "Cancel and stop the running step",
    endpoint: "cancel",
    body: { stop_running: true },
    danger: true,
    help: "The running step's command is stopped now (its attempt counts as failed), then every step that ran is rolled back.",
  },
  retry: {
    label: "Retry",
    help: "Run the flow again from its first step, with the parameters it was submitted with (its rollback undid every step).",
  },
  "retry-rollback": {
    label: "Retry rollback",
    help: "Dispatch the rollback step that failed again.",
  },
  compensate: {
    label: "Mark compensated",
    danger: true,
    help: "You undid the failed rollback step by hand (say how): the rollback goes on with the earlier steps.",
  },
  pause: {
    label: "Pause",
    help: "No new step starts until you resume: running steps finish, a step only dispatched waits again.",
  },
  resume: {
    label: "Resume",
    help: "Clear the pause: every step that became ready is dispatched.",
  },
  // A task held by a failure (on_failure: hold): nothing was rolled back, nothing new starts.
  redrive: {
    label: "Redrive",
    help: "Go on from where it stopped: the failed items run again, then the ones never started; what succeeded never runs again.",
  },
  rollback: {
    label: "Roll back",
    danger: true,
    help: "Roll the task back, as the failure would have without the hold: every applied item is rolled back.",
  },
  skip: {
    label: "Skip failed step",
    danger: true,
    help: "The flow goes on as if this step succeeded (it has no output and is never rolled back).",
  },
};

// The unit an operator may skip (common/engine/operator/flow.py decides): a running task's unit that
// keeps failing (its retry pending or running), one a gate holds before its claim (a delayed
// start, a drained module), or the step that failed in a rolled-back task.
export function skippableUnit(task) {
  if (task.Held && !task.CancelRequested) {  // the failed item that holds the task
    const s = task.Steps[task.Held.Cursor];
    const item = task.Held.Item ?? null;
    return { step: task.Held.Cursor, item, name: `step ${task.Held.Cursor} (${s.Name})${item === null ? "" : ` item ${item}`}` };
  }
  const failed = (unit) => unit.Code !== null && unit.Code !== undefined && unit.Code !== 0;
  for (const [step, s] of task.Steps.entries()) {
    if (task.TaskStatus === 4) {
      if ((failed(s) && s.State !== "cancelled") || (s.Items ?? []).some((i) => failed(i) && i.State !== "cancelled")) {
        return { step, item: null, name: `step ${step} (${s.Name})` };
      }
    } else if (!task.CancelRequested && (task.TaskStatus === 1 || task.TaskStatus === 2)) {
      const units = s.Items ? s.Items.map((u, item) => [u, item]) : [[s, null]];
      for (const [u, item] of units) {
        if (u.State === "running" && failed(u)) {
          return { step, item, name: `step ${step} (${s.Name})${item === null ? "" : ` item ${item}`}` };
        }
        // Shown waiting with a run nobody may claim yet (a delayed start, a drained module): an
        // operator may do it by hand.
        const run = (task.Runs ?? []).find((r) => r.Cursor === step && (r.Item ?? null) === item && r.Phase === 0);
        if (u.State === "waiting" && run && run.State === "pending" && (run.HeldBy || task.ScheduledFor)) {
          return { step, item, held: true, name: `step ${step} (${s.Name})${item === null ? "" : ` item ${item}`}` };
        }
      }
    }
  }
  return null;
}

// Nothing has run yet (not started, or scheduled): a cancel ends the task at once.
const CANCEL_BEFORE_START = { ...ACTIONS.cancel, help: "No step has run yet: the task ends now, with nothing to roll back." };

export function fittingActions(task) {
  const skip = skippableUnit(task) ? ["skip"] : [];
  switch (task.TaskStatus) {
    case 1: case 2: {
      if (task.CancelRequested) return [];
      if (task.Held) return ["redrive", "rollback", "cancel", ...skip];
      // A claimed run: the task's own, or one of an item kept in a record of its own (`ItemRuns`).
      const claimed = [...(task.Runs ?? []), ...(task.ItemRuns ?? [])].some((r) => r.State === "running");
      const running = claimed ? ["cancel-now"] : [];
      return ["cancel", ...running, task.Paused ? "resume" : "pause", ...skip];
    }
    case 4: return ["retry", ...skip];
    case 5: return ["retry-rollback", "compensate"];
    default: return [];
  }
}

// `perform(action, reason, extra)` returns a promise of the task as written (`extra`: more of
// the body, the unit a skip names).
export function actionBar(task, perform) {
  const names = fittingActions(task);
  if (!names.length) {
    const why = task.CancelRequested
      ? `Cancel requested by ${task.CancelRequested.Actor}: the running step finishes, then the task rolls back.`
      : task.TaskStatus === 3 ? "Rolling back: no action until the rollback ends."
        : "Nothing to do: the task succeeded.";
    return el("p", { class: "muted", text: why });
  }
  const unit = skippableUnit(task);
  return el("div", { class: "action-bar" }, names.map((name) => {
    let action = name === "cancel" && !task.TimeStart ? CANCEL_BEFORE_START : ACTIONS[name];
    if (name === "skip") {
      action = { ...action, label: `Skip ${unit.name}`, ...(unit.held ? { help: "Nothing has run it yet (it waits for " +
        "its start time or a drained module): the flow goes on as if it succeeded; do its work by hand." } : {}) };
    }
    const extra = name === "skip" ? { step: unit.step, ...(unit.item === null ? {} : { item: unit.item }) } : { ...action.body };
    return el("div", { class: "action" },
      el("button", { type: "button", class: action.danger ? "danger" : "primary", dataset: { action: name },
        text: action.label, onclick: () => askReason({ title: action.label, help: action.help, danger: action.danger,
          placeholder: "Why? Recorded in the task's history with your name." }, (reason) => perform(name, reason, extra)) }),
      el("span", { class: "muted small", text: action.help }));
  }));
}

export function actionLabel(name) {
  return ACTIONS[name]?.label ?? name;
}

// The API path of an action: its own name, unless it is a variant of another (cancel-now).
export function actionEndpoint(name) {
  return ACTIONS[name]?.endpoint ?? name;
}

// The actions a step's kind offers while the step waits for people (an approval step's approve
// and reject): the task view says which (`Steps[].Shown.Actions`), so no kind needs code here.
// `performStep(step, action, reason)` returns a promise of the task as written.
export function stepActionBar(task, performStep) {
  const offered = task.Steps.flatMap((step) => (step.Shown?.Actions ?? []).map((action) => ({ step, action })));
  if (!offered.length) return null;
  return el("div", { class: "action-bar step-actions" }, offered.map(({ step, action }) => {
    const title = `${action.Label} ${step.Name}`;
    return el("div", { class: "action" },
      el("button", { type: "button", class: action.Name === "reject" ? "danger" : "primary",
        dataset: { stepAction: action.Name, step: step.Name }, text: title,
        onclick: () => askReason({ title, help: action.Summary, danger: action.Name === "reject",
          placeholder: "Why? Recorded in the task's history with your name." },
        (reason) => performStep(step.Name, action.Name, reason)) }),
      el("span", { class: "muted small", text: action.Summary }));
  }));
}
