// The console's only way to the server: the /api/v1 endpoints, with the token the user gave
// as a bearer header. The token lives in sessionStorage (gone when the tab closes) and never
// in a URL, where it would reach history, logs and Referer headers.

const KEY = "baton.apiToken";
const BASE = "/api/v1";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  forget: () => sessionStorage.removeItem(KEY),
};

// Thrown for every answer that is not 2xx; `message` is the API's own error message.
export class ApiError extends Error {
  constructor(status, code, message, fields = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
  }

  describe() {
    const fields = this.fields.map((f) => `${f.path}: ${f.message}`).join("; ");
    return `${this.status} ${this.code}: ${this.message}${fields ? ` (${fields})` : ""}`;
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  const secret = token.get();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(BASE + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit",
    });
  } catch (exc) {
    throw new ApiError(0, "unreachable", `OSS cannot be reached (${exc.message})`);
  }
  const data = await response.json().catch(() => null);
  if (response.ok) return data;
  const error = data?.error ?? {};
  const failure = new ApiError(response.status, error.code ?? "error",
    error.message ?? response.statusText, error.fields ?? []);
  if (response.status === 401) onUnauthorized(failure);
  throw failure;
}

// A query string from a plain object; arrays repeat the key, empty values are left out.
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    for (const item of [value].flat()) {
      if (item !== undefined && item !== null && item !== "") search.append(key, item);
    }
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
