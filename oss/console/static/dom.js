// Building the page from data. Every value goes in as a text node (textContent), never as
// markup: task parameters and messages are user input.

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, String(value)); // attribute values are not parsed as markup
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

// Times are UNIX epoch seconds (UTC) in the API. Every time on every page is written one way:
// 24-hour, ISO-like, in the browser's time zone WITH its offset ("2026-11-23 14:05:09 +01:00"),
// so an operator comparing it with a log line in UTC knows which hour it is. The UTC ISO time
// is the tooltip. `precise` adds milliseconds (a task's history, where events are close).
export function when(seconds, precise = false) {
  if (seconds === null || seconds === undefined) return el("span", { class: "muted", text: "—" });
  const date = new Date(seconds * 1000);
  const [day, time] = stamp(date, precise);
  // Two spans, so a narrow column breaks between the date and the time of day.
  return el("time", { datetime: date.toISOString(), title: date.toISOString() },
    el("span", { class: "day", text: day }), " ", el("span", { class: "clock", text: time }));
}

// The same format as text: [date, "time offset"].
export function stamp(date, precise = false) {
  const pad = (n, width = 2) => String(Math.abs(n)).padStart(width, "0");
  const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  const millis = precise ? `.${pad(date.getMilliseconds(), 3)}` : "";
  const offset = -date.getTimezoneOffset(); // minutes east of UTC
  const zone = `${offset < 0 ? "-" : "+"}${pad(Math.trunc(offset / 60))}:${pad(offset % 60)}`;
  return [day, `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${millis} ${zone}`];
}

export function nowText() {
  return stamp(new Date()).join(" ");
}

// `ended`: the task is final, so a phase without an end did not end (it was stopped or never
// concluded): it is not running "so far", and no duration is made up for it.
export function duration(start, end, ended = false) {
  if (start === null || start === undefined) return "";
  if (ended && (end === null || end === undefined)) return "";
  const seconds = Math.max(0, (end ?? Date.now() / 1000) - start);
  let text;
  if (seconds < 1) text = `${Math.round(seconds * 1000)} ms`;
  else if (seconds < 60) text = `${seconds.toFixed(1)} s`;
  else if (seconds < 3600) text = `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  else text = `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
  return end === null || end === undefined ? `${text} so far` : text;
}

export function shortId(id) {
  return id.length > 12 ? id.slice(0, 8) + "…" : id;
}

// A value of any JSON type as readable text (objects as indented JSON).
export function asText(value) {
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}
