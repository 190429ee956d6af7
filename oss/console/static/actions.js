// The operator actions that fit a task's state (common/operator_actions.py decides; the API
// answers 409 for one that does not fit, and the console shows that answer), and the dialog
// that asks for the reason every action records in the task's history.

import { el, replace } from "./dom.js";

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
    const action = ACTIONS[name];
    return el("div", { class: "action" },
      el("button", { type: "button", class: action.danger ? "danger" : "primary", dataset: { action: name },
        text: action.label, onclick: () => askReason(name, action, perform) }),
      el("span", { class: "muted small", text: action.help }));
  }));
}

function askReason(name, action, perform) {
  const dialog = document.getElementById("reason-dialog");
  const input = el("textarea", { name: "reason", rows: "3", required: "", maxlength: "2000",
    placeholder: "Why? Recorded in the task's history with your name." });
  const form = el("form", { method: "dialog" },
    el("h2", { text: action.label }),
    el("p", { class: "muted", text: action.help }),
    el("label", { class: "field wide" }, el("span", { text: "Reason" }), input),
    el("div", { class: "dialog-buttons" },
      el("button", { type: "button", text: "Back", onclick: () => dialog.close() }),
      el("button", { type: "submit", class: action.danger ? "danger" : "primary", text: action.label })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) { input.focus(); return; }
    dialog.close();
    perform(name, input.value.trim());
  });
  replace(dialog, form);
  dialog.showModal();
  input.focus();
}

export function actionLabel(name) {
  return ACTIONS[name]?.label ?? name;
}
