// Paygate console: progressive enhancement only; every page works without it.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Submit the payment filters as soon as the status changes.
  var status = document.getElementById("status");
  if (status && status.form) {
    status.addEventListener("change", function () { status.form.submit(); });
  }
});
