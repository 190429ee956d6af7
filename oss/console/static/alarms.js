// System alarms the monitor received (failed rollbacks, dead letters): list, acknowledge.

import { call, query } from "./api.js";
import { el, replace, when, shortId } from "./dom.js";
import { PHASES } from "./labels.js";
import { errorBanner } from "./widgets.js";
import { poller } from "./poll.js";
import { hashFor } from "./route.js";

const REFRESH_MS = 5000;

export function showAlarms(root, _arg, params) {
  const all = params.all === "1";
  const results = el("section", { "aria-live": "polite" });
  const outcome = el("div", { class: "outcome" });
  replace(root,
    el("div", { class: "title-row" },
      el("h1", { text: "Alarms" }),
      el("nav", { class: "tabs" },
        el("a", { href: hashFor("alarms"), class: all ? "" : "current", text: "Open" }),
        el("a", { href: hashFor("alarms", "", { all: "1" }), class: all ? "current" : "", text: "All" }))),
    outcome, results);
  let shown = "";
  const refresh = async () => {
    try {
      const page = await call("GET", "/alarms" + query({ acknowledged: all ? "" : "false" }));
      const fingerprint = JSON.stringify(page);
      if (fingerprint !== shown) {
        shown = fingerprint;
        replace(results, table(page.items, acknowledge));
      }
    } catch (error) {
      replace(results, errorBanner(error));
    }
    return true;
  };
  const polling = poller(refresh, REFRESH_MS);

  async function acknowledge(alarm) {
    try {
      await call("POST", `/alarms/${encodeURIComponent(alarm.AlarmId)}/ack`);
      replace(outcome, el("div", { class: "banner ok", role: "status", text: `Alarm ${alarm.AlarmId} acknowledged.` }));
    } catch (error) {
      replace(outcome, el("div", { class: "banner error", role: "alert", text: `Not acknowledged: ${error.describe()}` }));
    }
    polling.kick();
  }

  polling.start();
  return polling;
}

function table(alarms, acknowledge) {
  if (!alarms.length) return el("p", { class: "empty", text: "No alarms. All quiet." });
  const head = el("thead", {}, el("tr", {},
    ["Time", "Kind", "Task", "Where", "Message", ""].map((h) => el("th", { text: h }))));
  return el("table", { class: "alarms" }, head, el("tbody", {}, alarms.map((alarm) => el("tr", {},
    el("td", { class: "nowrap" }, when(alarm.Time)),
    el("td", {}, el("span", { class: `badge ${alarm.Kind === "rollback_failed" ? "st-rollback-failed" : "st-failed"}` },
      el("span", { class: "dot" }), alarm.Kind.replace("_", " "))),
    el("td", {}, alarm.TaskId
      ? el("a", { href: hashFor("task", alarm.TaskId), title: alarm.TaskId }, el("code", { text: shortId(alarm.TaskId) }))
      : "—"),
    el("td", { text: where(alarm) }),
    el("td", { class: "message wrap", text: alarm.Message }),
    el("td", {}, alarm.Acknowledged
      ? el("span", { class: "muted small" }, `acknowledged by ${alarm.AcknowledgedBy} `, when(alarm.AcknowledgedAt))
      : el("button", { type: "button", text: "Acknowledge", onclick: () => acknowledge(alarm) }))))));
}

function where(alarm) {
  const parts = [];
  if (alarm.Cursor !== null) parts.push(`step ${alarm.Cursor}`);
  if (alarm.Phase !== null) parts.push(PHASES[alarm.Phase]);
  if (alarm.Module) parts.push(`${alarm.Module}${alarm.Command ? " · " + alarm.Command : ""}`);
  return parts.join(", ");
}
