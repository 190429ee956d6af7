// Views are addressed by the URL fragment: #/tasks?status=4, #/task/<id>, #/alarms. The
// fragment never reaches the server; it carries filters and ids, never a token.

export function hashFor(view, arg = "", params = {}) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.append(key, value);
  }
  const text = search.toString();
  return `#/${view}${arg ? "/" + encodeURIComponent(arg) : ""}${text ? "?" + text : ""}`;
}

export function parseHash(hash = location.hash) {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  const [view = "", ...rest] = path.split("/");
  const arg = rest.length ? decodeURIComponent(rest.join("/")) : "";
  return { view: view || "tasks", arg, params: Object.fromEntries(new URLSearchParams(search)) };
}

export function go(view, arg = "", params = {}) {
  const hash = hashFor(view, arg, params);
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange")); // reload it
  else location.hash = hash;
}
