// The operator actions that fit a task's state (common/operator_actions.py decides; the API
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
};

// Nothing has run yet (not started, or scheduled): a cancel ends the task at once.
const CANCEL_BEFORE_START = { ...ACTIONS.cancel, help: "No step has run yet: the task ends now, with nothing to roll back." };

export function fittingActions(task) {
  switch (task.TaskStatus) {
    case 1: case 2: return task.CancelRequested ? [] : ["cancel"];
    case 4: return ["retry"];
    case 5: return ["retry-rollback", "compensate"];
    default: return [];
  }
}

// `perform(action, reason)` returns a promise of the task as written.
export function actionBar(task, perform) {
  const names = fittingActions(task);
  if (!names.length) {
    const why = task.CancelRequested
      ? `Cancel requested by ${task.CancelRequested.Actor}: the running step finishes, then the task rolls back.`
      : task.TaskStatus === 3 ? "Rolling back: no action until the rollback ends."
        : "Nothing to do: the task succeeded.";
    return el("p", { class: "muted", text: why });
  }
  return el("div", { class: "action-bar" }, names.map((name) => {
    const action = name === "cancel" && !task.TimeStart ? CANCEL_BEFORE_START : ACTIONS[name];
    return el("div", { class: "action" },
      el("button", { type: "button", class: action.danger ? "danger" : "primary", dataset: { action: name },
        text: action.label, onclick: () => askReason({ title: action.label, help: action.help, danger: action.danger,
          placeholder: "Why? Recorded in the task's history with your name." }, (reason) => perform(name, reason)) }),
      el("span", { class: "muted small", text: action.help }));
  }));
}

export function actionLabel(name) {
  return ACTIONS[name]?.label ?? name;
}
