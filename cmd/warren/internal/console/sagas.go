package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/saga"
)

// DefaultSagaLimit is how many instances of a saga the page lists when it
// does not ask for another bound.
const DefaultSagaLimit = 200

// maxSagaLimit bounds what a page may ask for: one table of a saga's
// instances must stay readable, and cheap to read.
const maxSagaLimit = 1000

// instancesJSON is one saga's instances as the page lists them.
type instancesJSON struct {
	Saga      string         `json:"saga"`
	Table     string         `json:"table"`
	State     string         `json:"state"` // "running", "completed" or "all"
	Order     string         `json:"order"` // "oldest" or "newest"
	Limit     int            `json:"limit"`
	Total     int64          `json:"total"` // instances selected, beyond the limit too
	More      int64          `json:"more"`  // how many of those are not listed
	Instances []instanceJSON `json:"instances"`
}

// instanceJSON is one instance; every field is text or a number for the
// page to show as text.
type instanceJSON struct {
	Instance    string        `json:"instance"`
	State       string        `json:"state"` // running or completed
	Version     int64         `json:"version"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	CompletedAt *time.Time    `json:"completed_at,omitempty"`
	Timeouts    []timeoutJSON `json:"timeouts"`
}

// timeoutJSON is one pending timeout of an instance.
type timeoutJSON struct {
	Name      string `json:"name"`
	MessageID string `json:"message_id"` // the scheduled fact's id in the outbox
	// DueAt is when the outbox publishes the timeout's fact; absent when
	// it was published already (or the console reads no outbox).
	DueAt *time.Time `json:"due_at,omitempty"`
}

// listInstances answers GET /api/sagas/{saga}/instances?state=&order=&limit=:
// a saga's instances, read like the overview's figures, through Sagas. It
// changes nothing, so it needs no token, like the poison listing.
func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Sagas == nil {
		writeError(w, http.StatusNotFound, "the console reads no saga instances: start it with --saga-dsn")
		return
	}
	q := saga.ListQuery{Saga: r.PathValue("saga"), Limit: DefaultSagaLimit}
	out := instancesJSON{Saga: q.Saga, Table: s.cfg.Sagas.Table(), State: "running", Order: "oldest", Instances: []instanceJSON{}}
	switch v := r.URL.Query().Get("state"); v {
	case "", "running":
		q.State = saga.RunningInstances
	case "completed":
		q.State, out.State = saga.CompletedInstances, v
	case "all":
		q.State, out.State = saga.AllInstances, v
	default:
		writeError(w, http.StatusBadRequest, "state "+strconv.Quote(v)+": expected running, completed or all")
		return
	}
	switch v := r.URL.Query().Get("order"); v {
	case "", "oldest":
	case "newest":
		q.NewestFirst, out.Order = true, v
	default:
		writeError(w, http.StatusBadRequest, "order "+strconv.Quote(v)+": expected oldest or newest")
		return
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSagaLimit {
			writeError(w, http.StatusBadRequest, "limit "+strconv.Quote(v)+": expected a number from 1 to "+strconv.Itoa(maxSagaLimit))
			return
		}
		q.Limit = n
	}
	out.Limit = q.Limit
	page, err := s.cfg.Sagas.Instances(r.Context(), q)
	if err != nil {
		writeError(w, http.StatusBadGateway, "read the instances of "+q.Saga+": "+secret.Text(err.Error()))
		return
	}
	out.Total, out.More = page.Total, page.Total-int64(len(page.Rows))
	for _, x := range page.Rows {
		i := instanceJSON{Instance: x.Instance, State: "running", Version: x.Version, CreatedAt: x.CreatedAt.UTC(), UpdatedAt: x.UpdatedAt.UTC(), Timeouts: []timeoutJSON{}}
		if !x.CompletedAt.IsZero() {
			t := x.CompletedAt.UTC()
			i.State, i.CompletedAt = "completed", &t
		}
		for _, name := range x.TimeoutNames() {
			t := timeoutJSON{Name: name, MessageID: x.Timeouts[name]}
			if due, ok := x.Due[name]; ok {
				due = due.UTC()
				t.DueAt = &due
			}
			i.Timeouts = append(i.Timeouts, t)
		}
		out.Instances = append(out.Instances, i)
	}
	writeJSON(w, http.StatusOK, out)
}
