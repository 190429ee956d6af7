// Re-running a view's refresh while it asks for more: a chain of timeouts, so a slow answer
// never overlaps the next request, and a view that is left stops polling at once.

export function poller(refresh, intervalMs) {
  let timer = null;
  let stopped = false;
  async function tick() {
    timer = null;
    let again = false;
    try {
      again = await refresh();
    } catch {
      again = true; // the view showed the error; try again later
    }
    if (again && !stopped) timer = setTimeout(tick, intervalMs);
  }
  return {
    start() { if (!stopped && timer === null) tick(); },
    kick() { if (timer !== null) clearTimeout(timer); tick(); }, // refresh now, then go on
    stop() { stopped = true; if (timer !== null) clearTimeout(timer); },
  };
}
