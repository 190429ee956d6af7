// Following one task over Server-Sent Events (GET /api/v1/tasks/{id}/events): the server sends
// each change as it happens, so the page does not poll.
//
// Read with fetch, not EventSource: EventSource cannot send the Authorization header, and the
// token must never go into a URL (history, logs, Referer) nor into a cookie (CSRF). fetch sends
// it as every other call of the console does (api.js), and the body is parsed as the SSE format.
// A stream that ends early (the server's `timeout`, a restart, a dropped connection) is opened
// again with Last-Event-ID, so nothing is missed and nothing is drawn twice.

import { token } from "./api.js";

const RETRY_MS = [500, 1000, 2000, 5000]; // reconnects back off; one answer resets them

// `onProgress`: a step over item records changed its counts by state (an event `progress`).
export function followTask(taskId, onTask, onProblem, onProgress = () => {}) {
  let stopped = false;
  let controller = null;
  let lastId = null;

  async function openOnce() {
    controller = new AbortController();
    const headers = { Accept: "text/event-stream" };
    const secret = token.get();
    if (secret) headers.Authorization = `Bearer ${secret}`;
    if (lastId) headers["Last-Event-ID"] = lastId;
    const response = await fetch(`/api/v1/tasks/${encodeURIComponent(taskId)}/events`,
      { headers, signal: controller.signal, cache: "no-store", credentials: "omit" });
    if (!response.ok) return { status: response.status };
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { ended: false };
      buffer += value.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const message = parse(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (message.id) lastId = message.id;
        if (message.event === "task") onTask(JSON.parse(message.data));
        if (message.event === "progress") onProgress(JSON.parse(message.data));
        if (message.event === "end") return { ended: true };
      }
    }
  }

  (async () => {
    let failures = 0;
    while (!stopped) {
      let outcome;
      try {
        outcome = await openOnce();
      } catch {
        outcome = { status: 0 }; // unreachable, or aborted by stop()
      }
      if (stopped || outcome.ended) return;
      if (outcome.status === 401 || outcome.status === 404) return onProblem(outcome.status);
      failures = outcome.status === undefined ? 0 : failures + 1; // a stream that ran resets it
      await new Promise((done) => setTimeout(done, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]));
    }
  })();

  return { stop() { stopped = true; controller?.abort(); } };
}

// One SSE message: `field: value` lines; data lines joined; comments (":") ignored.
function parse(block) {
  const message = { event: "message", data: [], id: null };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") message.data.push(value);
    else if (field === "event") message.event = value;
    else if (field === "id") message.id = value;
  }
  return { ...message, data: message.data.join("\n") };
}
