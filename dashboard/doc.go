// Package dashboard serves testdbd's web dashboard: one HTML page with its
// stylesheet, script and icon, embedded in the binary. The page shows the
// servers, templates, pools, leases and reset timings and updates itself by
// polling the public REST API (/v1/instances, /v1/templates, /v1/leases,
// /v1/stats, /v1/events) every 1.5 s; it has no access of its own.
//
// The daemon mounts Handler at "GET /{$}" and "GET /ui/". The files need no
// token (the page asks for one and sends it as "Authorization: Bearer" on
// its API calls); Public says which requests they are.
//
// It imports only the standard library: the page reads the same public API
// any client does.
package dashboard
