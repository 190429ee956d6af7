// Names, words and colours (CSS classes) of task statuses, step states and result codes, as
// common/engine/states.py defines them. The two ways a task fails are told apart: ROLLED_BACK (it
// failed, or was cancelled, and everything was undone cleanly) and ROLLBACK_FAILED (an undo
// failed too: an operator must act).

export const TASK_STATUSES = [
  { code: 0, name: "SUCCESS", label: "Succeeded", css: "st-success" },
  { code: 1, name: "NOT_STARTED", label: "Not started", css: "st-waiting" },
  { code: 2, name: "RUNNING", label: "Running", css: "st-running" },
  { code: 3, name: "ROLLING_BACK", label: "Rolling back", css: "st-rolling-back" },
  { code: 4, name: "ROLLED_BACK", label: "Failed · rolled back", css: "st-rolled-back" },
  { code: 5, name: "ROLLBACK_FAILED", label: "Rollback failed", css: "st-rollback-failed" },
];
export const FINAL = new Set([0, 4, 5]);

// `task`: a task or a list item (TaskStatus, CancelRequested, ScheduledFor).
export function taskStatus(task) {
  const code = task.TaskStatus;
  const status = TASK_STATUSES.find((s) => s.code === code) ??
    { code, name: String(code), label: `Status ${code}`, css: "st-waiting" };
  // A cancelled task ends ROLLED_BACK like a failed one; its CancelRequested says it was a cancel.
  if (code === 4 && task.CancelRequested) return { ...status, label: "Cancelled · rolled back" };
  // Submitted with a start time still ahead: nothing runs, whatever step 0's state says.
  if (code === 1 && task.ScheduledFor) return { ...status, label: "Scheduled", css: "st-scheduled" };
  // Not started because it waits for something (a lock): say what, not just "not started".
  if (code === 1 && task.WaitingFor) return { ...status, label: `Waiting for ${task.WaitingFor.Kind}` };
  // Running, with a step a drained module holds (a deploy): say so.
  if (code === 2 && task.WaitingFor?.Kind === "drain") return { ...status, label: "Running · waiting for drain" };
  return status;
}

export const STEP_STATES = {
  waiting: { label: "waiting", css: "st-waiting" },
  running: { label: "running", css: "st-running" },
  succeeded: { label: "succeeded", css: "st-success" },
  failed: { label: "failed", css: "st-failed" },
  rolling_back: { label: "rolling back", css: "st-rolling-back" },
  rolled_back: { label: "rolled back", css: "st-rolled-back" },
  rollback_failed: { label: "rollback failed", css: "st-rollback-failed" },
  skipped: { label: "skipped", css: "st-skipped" },
  cancelled: { label: "cancelled", css: "st-skipped" },
  compensated: { label: "compensated", css: "st-compensated" },
  operator_skipped: { label: "skipped by an operator", css: "st-compensated" },
  rejected: { label: "rejected", css: "st-failed" }, // an approval step, as its kind reads it (Shown.State)
  scheduled: { label: "scheduled", css: "st-scheduled" }, // the console's: a delayed step 0
};

// What the legend explains: each colour a step (or a progress segment) can have.
export const LEGEND = [
  ["st-waiting", "waiting / not run"], ["st-running", "running"], ["st-success", "succeeded"],
  ["st-failed", "failed"], ["st-rolling-back", "rolling back"], ["st-rolled-back", "rolled back"],
  ["st-rollback-failed", "rollback failed"], ["st-compensated", "compensated or skipped by hand"],
  ["st-skipped", "skipped (nothing to undo)"], ["st-scheduled", "scheduled (waits for its start time)"],
];

// A step's state as its kind reads it where the stored one says less (`Shown.State`: an
// approval step that was rejected reads "rejected", not "skipped").
export function shownState(step) {
  return stepState(step.Shown?.State ?? step.State);
}

export function stepState(state) {
  return STEP_STATES[state] ?? { label: String(state), css: "st-waiting" };
}

// ResultCode: how a phase's last attempt ended.
export const RESULT_CODES = ["ok", "failed", "timed out", "worker lost", "process died", "outcome unknown"];

export function resultCode(code) {
  if (code === null || code === undefined) return null;
  return RESULT_CODES[code] ?? `code ${code}`;
}

export const PHASES = ["normal", "rollback"];

// One phase's outcome in words, from its last attempt's code (null: the phase did not end).
export function phaseOutcome(phase, code) {
  if (code === null || code === undefined) return null;
  if (code === 0) return phase === "normal"
    ? { label: "succeeded", css: "st-success" } : { label: "rolled back", css: "st-rolled-back" };
  const how = code === 1 ? "" : ` (${RESULT_CODES[code] ?? `code ${code}`})`;
  return phase === "normal"
    ? { label: `failed${how}`, css: "st-failed" } : { label: `rollback failed${how}`, css: "st-rollback-failed" };
}

// The step whose normal phase failed (the one that made the task roll back): its own code, or a
// for_each step's, which is its first failed item's (the API derives it from the items).
export function failedHere(step) {
  return step.Code !== null && step.Code !== undefined && step.Code !== 0;
}
