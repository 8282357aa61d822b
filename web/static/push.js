// Web Push on the notification settings page: turning push on registers
// the service worker, asks the browser for a push subscription with the
// server's VAPID key, and posts it as a form with the page's CSRF token;
// turning it off unsubscribes the browser and tells the server. Without
// this script (or a browser without Web Push) the page says what push
// needs, and lists the browsers where it is on, each with a form to turn
// it off.
"use strict";
(function () {
  var box = document.getElementById("push");
  if (!box) { return; }
  var status = document.getElementById("push-status");
  var on = document.getElementById("push-on"), off = document.getElementById("push-off");
  function say(text) { status.textContent = text; }
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    say("This browser cannot receive push notifications.");
    return;
  }
  function bytes(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) { s += "="; }
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }
  function post(path, fields) {
    fields.csrf = box.getAttribute("data-csrf");
    return fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    }).then(function (resp) {
      if (resp.ok) { window.location.assign(resp.url); return; }
      return resp.text().then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var err = doc.getElementById("push-error");
        throw new Error(err ? err.textContent : "ctalk answered HTTP " + resp.status);
      });
    });
  }
  var ready = navigator.serviceWorker.register(box.getAttribute("data-worker"), { scope: "/" })
    .then(function () { return navigator.serviceWorker.ready; });
  function show(sub) {
    on.hidden = !!sub;
    off.hidden = !sub;
    say(sub ? "Push notifications are on in this browser." : "Push notifications are off in this browser.");
  }
  ready.then(function (reg) { return reg.pushManager.getSubscription(); }).then(show, function (e) {
    say("This browser cannot receive push notifications here: " + e.message);
  });
  on.addEventListener("click", function () {
    say("Asking your browser…");
    Notification.requestPermission().then(function (perm) {
      if (perm !== "granted") { throw new Error("your browser does not allow this site to show notifications; allow them in its site settings"); }
      return ready;
    }).then(function (reg) {
      return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(box.getAttribute("data-vapid-key")) });
    }).then(function (sub) {
      var j = sub.toJSON();
      return post("/profile/notifications/push", { endpoint: j.endpoint, p256dh: j.keys.p256dh, auth: j.keys.auth });
    }).catch(function (e) { say("Push could not be turned on: " + e.message); });
  });
  off.addEventListener("click", function () {
    ready.then(function (reg) { return reg.pushManager.getSubscription(); }).then(function (sub) {
      if (!sub) { show(null); return; }
      var endpoint = sub.endpoint;
      return sub.unsubscribe().then(function () { return post("/profile/notifications/push/delete", { endpoint: endpoint }); });
    }).catch(function (e) { say("Push could not be turned off: " + e.message); });
  });
})();
