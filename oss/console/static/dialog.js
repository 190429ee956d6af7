// The dialog that asks an operator why, before an action that records the reason (operator
// actions on a task, acknowledging alarms). `onReason(reason)` runs once a reason is given.

import { el, replace } from "./dom.js";

export function askReason({ title, help, danger = false, confirm = title, placeholder }, onReason) {
  const dialog = document.getElementById("reason-dialog");
  const input = el("textarea", { name: "reason", rows: "3", required: "", maxlength: "2000",
    placeholder: placeholder ?? "Why? Recorded with your name." });
  const form = el("form", { method: "dialog" },
    el("h2", { text: title }),
    el("p", { class: "muted", text: help }),
    el("label", { class: "field wide" }, el("span", { text: "Reason" }), input),
    el("div", { class: "dialog-buttons" },
      el("button", { type: "button", text: "Back", onclick: () => dialog.close() }),
      el("button", { type: "submit", class: danger ? "danger" : "primary", text: confirm })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) { input.focus(); return; }
    dialog.close();
    onReason(input.value.trim());
  });
  replace(dialog, form);
  dialog.showModal();
  input.focus();
}
