// The task list: while some listed task is unfinished, refresh the rows every few seconds.
(function () {
  "use strict";
  const table = document.getElementById("tasks");
  if (!table) return;
  const body = document.getElementById("task-rows");
  async function refresh() {
    if (table.dataset.live !== "1") return;
    try {
      const resp = await fetch(table.dataset.src, { credentials: "same-origin" });
      if (resp.ok) {
        body.innerHTML = await resp.text();
        const first = body.querySelector("tr[data-total]");
        if (first) document.getElementById("total").textContent = first.dataset.total;
        const running = /s-(queued|preparing|running|evaluating)/.test(body.innerHTML);
        table.dataset.live = running ? "1" : "0";
      }
    } catch (err) { /* green restarting: try again at the next tick */ }
    setTimeout(refresh, 3000);
  }
  setTimeout(refresh, 3000);
})();
