// ctalk's pages work without this script. It shows times in the person's
// time zone; live updates are added by the live section.
"use strict";
document.querySelectorAll("time[datetime]").forEach(function (el) {
  var d = new Date(el.getAttribute("datetime"));
  if (!isNaN(d)) { el.title = d.toLocaleString(); }
});
