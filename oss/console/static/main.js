// The console's entry point: ask for the API token once per tab, then show the view the URL
// fragment names, stopping the previous view's polling first.

import { call, token, whenUnauthorized } from "./api.js";
import { el, replace } from "./dom.js";
import { parseHash } from "./route.js";
import { showTasks } from "./list.js";
import { showTask } from "./task.js";
import { showAlarms } from "./alarms.js";
import { showPlan } from "./plan.js";

const VIEWS = { tasks: showTasks, task: showTask, alarms: showAlarms, plan: showPlan }; // each (root, arg, params)
const main = document.getElementById("view");
let current = null;

function show() {
  current?.stop();
  current = null;
  if (!token.get()) return askToken();
  const { view, arg, params } = parseHash();
  document.body.dataset.view = view;
  for (const link of document.querySelectorAll("header nav a")) {
    link.classList.toggle("current", link.dataset.view === (view === "task" ? "tasks" : view));
  }
  current = (VIEWS[view] ?? showTasks)(main, arg, params);
}

function askToken(problem = "") {
  current?.stop();
  current = null;
  document.body.dataset.view = "login";
  const input = el("input", { type: "password", name: "token", id: "token", autocomplete: "off",
    required: "", placeholder: "paste your token", spellcheck: "false" });
  const message = el("p", { class: problem ? "banner error" : "muted", role: problem ? "alert" : null,
    text: problem || "Your API token (from BATON_API_TOKENS). Kept in this tab only, until you close it." });
  const form = el("form", { class: "card login" },
    el("h1", { text: "Sign in" }), message,
    el("label", { class: "field wide" }, el("span", { text: "API token" }), input),
    el("button", { type: "submit", class: "primary", text: "Continue" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    token.set(input.value.trim());
    try {
      await call("GET", "/task-types"); // any read proves the token
    } catch (error) {
      if (error.status !== 401) { replace(message, error.describe()); message.className = "banner error"; }
      return; // a 401 re-draws this form with its message
    }
    show();
  });
  replace(main, form);
  input.focus();
}

whenUnauthorized(() => {
  token.forget();
  askToken("That token was refused (401): it is not one of BATON_API_TOKENS. Check it and try again.");
});

document.getElementById("sign-out").addEventListener("click", () => {
  token.forget();
  askToken();
});
window.addEventListener("hashchange", show);
show();
