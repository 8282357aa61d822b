// The service worker of ctalk's Web Push notifications: it shows what the
// server pushes (decrypted by the browser: a title, the first line or
// none of the words, the page to open) and opens that page, of this site
// only, when the notification is clicked.
"use strict";
self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  var data = {};
  try { data = event.data ? event.data.json() : {}; } catch (e) { data = {}; }
  var title = typeof data.title === "string" && data.title ? data.title : "ctalk: something waits for you";
  event.waitUntil(self.registration.showNotification(title, {
    body: typeof data.body === "string" ? data.body : "",
    tag: typeof data.id === "string" ? data.id : undefined,
    requireInteraction: data.urgent === true,
    data: { url: typeof data.url === "string" ? data.url : "/inbox" }
  }));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var target;
  try { target = new URL(event.notification.data.url, self.location.origin); } catch (e) { target = null; }
  if (!target || target.origin !== self.location.origin) { target = new URL("/inbox", self.location.origin); }
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (list) {
    for (var i = 0; i < list.length; i++) {
      if (list[i].url === target.href && "focus" in list[i]) { return list[i].focus(); }
    }
    return self.clients.openWindow(target.href);
  }));
});
