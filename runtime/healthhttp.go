package runtime

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// HealthHandler serves the health of conn and consumers (of any kind:
// consumers, ordered consumers, responders) in the usual
// Kubernetes form:
//
//   - a path ending in /livez (or /healthz): 200 while conn is not closed.
//     A Conn that is reconnecting is alive: restarting the process would
//     not bring the broker back.
//   - a path ending in /readyz: 200 when conn is connected and not blocked
//     by a resource alarm, and every consumer runs and is not paused; 503
//     otherwise.
//
// Both answer with a JSON body that says why: {"status": "ok" or
// "unavailable", "connection": {...}, "consumers": {"name": {...}}}.
// Mount it where the probes look:
//
//	mux.Handle("/livez", runtime.HealthHandler(conn, indexer, mailer))
//	mux.Handle("/readyz", runtime.HealthHandler(conn, indexer, mailer))
func HealthHandler(conn *Conn, consumers ...Runner) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		report := healthReport{Connection: healthJSONOf(conn.Health()), Consumers: map[string]healthJSON{}}
		ok := conn.ctx.Err() == nil
		if strings.HasSuffix(r.URL.Path, "/readyz") {
			h := conn.Health()
			ok = ok && h.Connected && !h.Blocked
		}
		for _, c := range consumers {
			ch := c.Health()
			j := healthJSONOf(ch)
			j.Running = &ch.Running
			report.Consumers[c.Name()] = j
			if strings.HasSuffix(r.URL.Path, "/readyz") {
				ok = ok && ch.Running && !ch.Paused
			}
		}
		report.Status = "ok"
		code := http.StatusOK
		if !ok {
			report.Status, code = "unavailable", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(report)
	})
}

type healthReport struct {
	Status     string                `json:"status"`
	Connection healthJSON            `json:"connection"`
	Consumers  map[string]healthJSON `json:"consumers,omitempty"`
}

// healthJSON is Health in the handler's body.
type healthJSON struct {
	Connected     bool       `json:"connected"`
	URL           string     `json:"url,omitempty"`
	Blocked       bool       `json:"blocked"`
	BlockedReason string     `json:"blocked_reason,omitempty"`
	Running       *bool      `json:"running,omitempty"`
	Paused        bool       `json:"paused"`
	LastError     string     `json:"last_error,omitempty"`
	LastErrorAt   *time.Time `json:"last_error_at,omitempty"`
}

func healthJSONOf(h Health) healthJSON {
	j := healthJSON{Connected: h.Connected, URL: h.URL, Blocked: h.Blocked, BlockedReason: h.BlockedReason, Paused: h.Paused}
	if h.LastError != nil {
		j.LastError = h.LastError.Error()
		at := h.LastErrorAt
		j.LastErrorAt = &at
	}
	return j
}
