// System alarms the monitor received (failed rollbacks, dead letters): each with the current
// status of its task (an alarm stays open after an operator dealt with the task, and says so),
// a link to what it is about, and acknowledging one, or many selected at once with a reason.

import { call, query } from "./api.js";
import { el, replace, when, shortId } from "./dom.js";
import { PHASES, taskStatus } from "./labels.js";
import { badge, errorBanner } from "./widgets.js";
import { askReason } from "./dialog.js";
import { poller } from "./poll.js";
import { hashFor } from "./route.js";

const REFRESH_MS = 5000;

export function showAlarms(root, _arg, params) {
  const all = params.all === "1";
  const results = el("section", { "aria-live": "polite" });
  const outcome = el("div", { class: "outcome" });
  const selected = new Set(); // ids of open alarms ticked; kept across refreshes
  const bulk = el("button", { type: "button", class: "primary", id: "ack-selected", disabled: "",
    onclick: () => askReason({
      title: "Acknowledge alarms", confirm: "Acknowledge",
      help: "Every selected alarm is marked acknowledged, with your name and this reason.",
      placeholder: "Why? e.g. the tasks were compensated by hand",
    }, acknowledgeSelected) });
  const selection = el("span", { class: "muted small" });
  const toolbar = el("div", { class: "bulk-bar" }, bulk, selection);
  const showSelection = () => {
    bulk.disabled = selected.size === 0;
    bulk.textContent = `Acknowledge selected (${selected.size})…`;
    selection.textContent = selected.size ? "" : "tick open alarms to acknowledge them together";
  };
  replace(root,
    el("div", { class: "title-row" },
      el("h1", { text: "Alarms" }),
      el("nav", { class: "tabs" },
        el("a", { href: hashFor("alarms"), class: all ? "" : "current", text: "Open" }),
        el("a", { href: hashFor("alarms", "", { all: "1" }), class: all ? "current" : "", text: "All" }))),
    outcome, toolbar, results);
  showSelection();
  let shown = "";
  const refresh = async () => {
    try {
      const page = await call("GET", "/alarms" + query({ acknowledged: all ? "" : "false" }));
      const fingerprint = JSON.stringify(page);
      if (fingerprint !== shown) {
        shown = fingerprint;
        const open = new Set(page.items.filter((a) => !a.Acknowledged).map((a) => a.AlarmId));
        for (const id of [...selected]) if (!open.has(id)) selected.delete(id);
        showSelection();
        replace(results, el("div", { class: "table-fit" }, table(page.items, { acknowledge, selected, showSelection })));
      }
    } catch (error) {
      replace(results, errorBanner(error));
    }
    return true;
  };
  const polling = poller(refresh, REFRESH_MS);
  const say = (ok, text) => replace(outcome,
    el("div", { class: `banner ${ok ? "ok" : "error"}`, role: ok ? "status" : "alert", text }));

  async function acknowledge(alarm) {
    try {
      await call("POST", `/alarms/${encodeURIComponent(alarm.AlarmId)}/ack`);
      say(true, `Alarm ${alarm.AlarmId} acknowledged.`);
    } catch (error) {
      say(false, `Not acknowledged: ${error.describe()}`);
    }
    polling.kick();
  }

  async function acknowledgeSelected(reason) {
    try {
      const done = await call("POST", "/alarms/acknowledge", { ids: [...selected], reason });
      const others = done.already.length + done.unknown.length;
      say(true, `${done.acknowledged.length} ${done.acknowledged.length === 1 ? "alarm" : "alarms"} acknowledged` +
        (others ? ` (${others} acknowledged before or gone).` : "."));
      selected.clear();
      showSelection();
    } catch (error) {
      say(false, `Not acknowledged: ${error.describe()}`);
    }
    polling.kick();
  }

  polling.start();
  return polling;
}

function table(alarms, { acknowledge, selected, showSelection }) {
  if (!alarms.length) return el("p", { class: "empty", text: "No alarms. All quiet." });
  const open = alarms.filter((a) => !a.Acknowledged);
  const tickAll = el("input", { type: "checkbox", "aria-label": "select every open alarm", class: "tick-all",
    onchange: () => {
      for (const alarm of open) tickAll.checked ? selected.add(alarm.AlarmId) : selected.delete(alarm.AlarmId);
      for (const box of document.querySelectorAll("input.tick")) box.checked = tickAll.checked;
      showSelection();
    } });
  tickAll.checked = open.length > 0 && open.every((a) => selected.has(a.AlarmId));
  const head = el("thead", {}, el("tr", {},
    el("th", { class: "c-tick" }, open.length ? tickAll : null),
    [["Time", "c-time"], ["Kind", "c-kind"], ["Task now", "c-task"], ["Where", "c-where"], ["Message", "c-message"],
      ["", "c-ack"]].map(([h, css]) => el("th", { class: css, text: h }))));
  return el("table", { class: "alarms" }, head, el("tbody", {}, alarms.map((alarm) => el("tr", {
    class: "alarm-row", dataset: { alarmId: alarm.AlarmId },
  },
  el("td", { class: "c-tick" }, alarm.Acknowledged ? null : tick(alarm, selected, showSelection)),
  el("td", { class: "c-time" }, when(alarm.Time)),
  el("td", { class: "c-kind" }, el("span", { class: `badge ${alarm.Kind === "rollback_failed" ? "st-rollback-failed" : "st-failed"}` },
    el("span", { class: "dot" }), alarm.Kind.replace("_", " "))),
  el("td", { class: "c-task" }, subject(alarm)),
  el("td", { class: "c-where", text: where(alarm) }),
  el("td", { class: "c-message message wrap", text: alarm.Message }),
  el("td", { class: "c-ack" }, alarm.Acknowledged
    ? el("span", { class: "muted small acked" }, `acknowledged by ${alarm.AcknowledgedBy} `, when(alarm.AcknowledgedAt),
      alarm.AcknowledgedReason ? `: ${alarm.AcknowledgedReason}` : "")
    : el("button", { type: "button", text: "Acknowledge", onclick: () => acknowledge(alarm) }))))));
}

function tick(alarm, selected, showSelection) {
  const box = el("input", { type: "checkbox", class: "tick", "aria-label": `select alarm ${alarm.AlarmId}`,
    onchange: () => { box.checked ? selected.add(alarm.AlarmId) : selected.delete(alarm.AlarmId); showSelection(); } });
  box.checked = selected.has(alarm.AlarmId);
  return box;
}

// What the alarm is about, as it stands now: its task with the task's current status, or for a
// message nobody could read (no task id in it), the tasks in flight that may be waiting for it.
function subject(alarm) {
  if (!alarm.TaskId) {
    return el("a", { class: "alarm-link", href: hashFor("tasks", "", { status: "2" }),
      title: "The message could not be read: a task waiting for it is among those running; the sweeper re-sends it",
      text: `tasks in flight${alarm.Module ? ` (${alarm.Module})` : ""} →` });
  }
  const link = el("a", { class: "alarm-link", href: hashFor("task", alarm.TaskId), title: alarm.TaskId },
    el("code", { text: shortId(alarm.TaskId) }));
  if (alarm.TaskStatus === null || alarm.TaskStatus === undefined) {
    return el("span", { class: "alarm-task" }, link, " ", el("span", { class: "muted small", text: "task not found" }));
  }
  // Compensated or retried to its end since the alarm: the alarm is only waiting to be acknowledged.
  const settled = alarm.Kind === "rollback_failed" && [0, 4].includes(alarm.TaskStatus) && !alarm.Acknowledged;
  return el("span", { class: "alarm-task" }, link, " ", badge(taskStatus(alarm)),
    settled ? el("div", { class: "muted small settled", text: "dealt with since: nothing left to do" }) : null);
}

function where(alarm) {
  const parts = [];
  if (alarm.Cursor !== null) parts.push(`step ${alarm.Cursor}`);
  if (alarm.Phase !== null) parts.push(PHASES[alarm.Phase]);
  if (alarm.Module) parts.push(`${alarm.Module}${alarm.Command ? " · " + alarm.Command : ""}`);
  return parts.join(", ");
}
