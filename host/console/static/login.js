// The token goes into a cookie the guard reads on page loads (GET only),
// and that the console's script sends as a bearer header on every API call.
// SameSite=Strict: no other site's page makes the browser send it. The
// token is tried first, so a wrong one is said here, not by a page of
// JSON.
"use strict";
const say = (text) => { document.getElementById("said").textContent = text; };
const why = new URLSearchParams(location.search).get("why");
if (why === "refused") say("The token this browser had was refused: give the right one.");
if (why === "out") say("Signed out.");
document.getElementById("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const t = document.getElementById("token").value.trim();
  let resp;
  try {
    resp = await fetch("/v1/status", { headers: { Authorization: "Bearer " + t } });
  } catch (e) {
    say("The daemon does not answer: " + e.message);
    return;
  }
  if (resp.status === 401) {
    say("That token was refused.");
    return;
  }
  document.cookie = "ruled_token=" + encodeURIComponent(t) + "; Path=/; SameSite=Strict";
  location.href = "/";
});
