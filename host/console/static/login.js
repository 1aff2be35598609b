// The token goes into a cookie the guard reads on page loads (GET only),
// and that the console's script sends as a bearer header on every API call.
// SameSite=Strict: no other site's page makes the browser send it.
"use strict";
document.getElementById("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = document.getElementById("token").value.trim();
  document.cookie = "ruled_token=" + encodeURIComponent(t) + "; Path=/; SameSite=Strict";
  location.href = "/";
});
