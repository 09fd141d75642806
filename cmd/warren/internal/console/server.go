package console

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/internal/delaystat"
	"github.com/warrenbus/warren/internal/secret"
)

//go:embed assets
var assets embed.FS

// TokenHeader carries the token on every request that changes something.
// A page of another origin cannot send a custom header without the
// console's consent (CORS), which it never gives.
const TokenHeader = "X-Warren-Token"

// contentSecurity forbids the page everything it does not need: no inline
// script or style, nothing from another origin, no framing. Should a
// payload ever reach the page as markup, the browser would not run it.
const contentSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /api/overview", s.overview)
	mux.HandleFunc("GET /api/consumers/{name}/poison", s.listPoison)
	mux.HandleFunc("POST /api/consumers/{name}/replay", s.change(s.replay))
	mux.HandleFunc("POST /api/consumers/{name}/discard", s.change(s.discard))
	mux.HandleFunc("GET /api/consumers/{name}/causes", s.listCauses)
	mux.HandleFunc("POST /api/consumers/{name}/groups/{group}/{action}", s.change(s.actOnGroup))
	mux.HandleFunc("POST /api/consumers/{name}/edit", s.change(s.edit))
	mux.HandleFunc("GET /api/sagas/{saga}/instances", s.listInstances)
	mux.HandleFunc("GET /api/topology.svg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write(s.svg)
	})
	mux.HandleFunc("GET /api/catalogue", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(s.catalogue)
	})
	mux.HandleFunc("GET /api/schemas", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"schemas": nonNil(s.cfg.Schemas)})
	})
	cop := http.NewCrossOriginProtection()
	return s.guard(cop.Handler(mux))
}

// guard sets the security headers of every answer and refuses a Host the
// console does not serve.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurity)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if len(s.cfg.AllowedHosts) > 0 && !slices.Contains(s.cfg.AllowedHosts, r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "this console does not answer to host "+r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHosts returns the Host headers a browser sends to a loopback
// listener at addr, or nil when addr is not loopback (then any Host is
// served; changes still need the token).
func LoopbackHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil
	}
	port := tcp.AddrPort().Port()
	var out []string
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		out = append(out, net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(int(port))))
	}
	return out
}

// change wraps a handler that changes something: it refuses it on a
// read-only console and without the token, and reads a JSON body.
func (s *Server) change(h func(w http.ResponseWriter, r *http.Request, req actionRequest)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.ReadOnly {
			writeError(w, http.StatusForbidden, "the console is read-only (--read-only): nothing was changed")
			return
		}
		got := r.Header.Get(TokenHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
			writeError(w, http.StatusUnauthorized, "this action needs the console's token (printed when warren console started): nothing was changed")
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "expected a JSON body (Content-Type: application/json): nothing was changed")
			return
		}
		var req actionRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "bad request body: "+err.Error()+": nothing was changed")
			return
		}
		h(w, r, req)
	}
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	now := s.figures.snapshot(r.Context())
	mgmtErr := now.mgmtErr
	out := overviewJSON{
		Broker:    secret.URL(s.cfg.BrokerURL),
		ReadOnly:  s.cfg.ReadOnly,
		Interval:  s.cfg.Interval.Milliseconds(),
		History:   s.cfg.History.Milliseconds(),
		Consumers: now.consumers,
		Delayed:   now.delayed,
		Outbox:    now.outbox,
		Sagas:     now.sagas,
		Error:     now.readErr,
		Unshown:   []string{},
	}
	if s.cfg.Management == nil {
		out.Unshown = append(out.Unshown, "redelivery rate: the broker counts redeliveries only in its management API; start warren console with --management-url http://HOST:15672/ to show it")
	} else {
		out.Management = s.cfg.Management.URL()
		if mgmtErr != "" {
			out.Unshown = append(out.Unshown, "redelivery rate: "+mgmtErr)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type overviewJSON struct {
	Broker     string    `json:"broker"`     // redacted
	Management string    `json:"management"` // "" without the management API
	ReadOnly   bool      `json:"read_only"`
	Interval   int64     `json:"interval_ms"`
	History    int64     `json:"history_ms"`
	Consumers  []figures `json:"consumers"`
	// Delayed is what the delay levels hold; absent without delayed facts.
	Delayed *delaystat.Levels `json:"delayed,omitempty"`
	// Outbox is the outbox table's figures; absent without --outbox-dsn.
	Outbox *outboxFig `json:"outbox,omitempty"`
	// Sagas are the sagas' instances; absent without --saga-dsn.
	Sagas   *sagasFig `json:"sagas,omitempty"`
	Error   string    `json:"error"`   // the last reading failed
	Unshown []string  `json:"unshown"` // figures the console cannot show, and why
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// encoding/json escapes <, > and & in strings, so even a browser that
	// ignored the content type would find no markup here.
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": secret.Text(msg)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
