package topology

import (
	"errors"
	"strings"
	"testing"
)

func TestBuildResponders(t *testing.T) {
	top, err := Build(Spec{Responders: []ResponderSpec{
		{Name: "pricing", Requests: []string{"pricing.quote", "pricing.check"}, Concurrency: 8},
	}})
	if err != nil {
		t.Fatal(err)
	}
	last := top.Exchanges[len(top.Exchanges)-1]
	if last.Name != DefaultRequestsExchange || last.Kind != "direct" || !last.Durable {
		t.Errorf("requests exchange = %+v, want durable direct %q", last, DefaultRequestsExchange)
	}
	r, ok := top.Responder("pricing")
	if !ok {
		t.Fatal("no responder pricing")
	}
	if r.Queue != "pricing.requests" || r.Concurrency != 8 || r.Prefetch != 16 || strings.Join(r.Requests, ",") != "pricing.check,pricing.quote" {
		t.Errorf("responder = %+v", r)
	}
	if q, ok := top.Queue("pricing.requests"); !ok || q.Role != RoleRequests || q.Type != Quorum {
		t.Errorf("queue = %+v, %v", q, ok)
	}
	var keys []string
	for _, b := range top.Bindings {
		if b.Queue == "pricing.requests" && b.Exchange == DefaultRequestsExchange {
			keys = append(keys, b.Key)
		}
	}
	if strings.Join(keys, ",") != "pricing.check,pricing.quote" {
		t.Errorf("bindings = %v", keys)
	}
	if part := top.Part("pricing"); len(part.Responders) != 1 || len(part.Queues) != 1 {
		t.Errorf("Part(pricing) = %+v", part)
	}
}

func TestBuildWithoutRespondersHasNoRequestsExchange(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top.Exchanges {
		if e.Kind != "topic" {
			t.Errorf("exchange %+v declared without responders", e)
		}
	}
}

func TestBuildRespondersProblems(t *testing.T) {
	_, err := Build(Spec{Responders: []ResponderSpec{
		{Name: "a", Requests: []string{"x.do"}},
		{Name: "b", Requests: []string{"x.do", "y.*"}},
		{Name: "c"},
	}})
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *SpecError", err)
	}
	text := err.Error()
	for _, want := range []string{`request "x.do": already answered by responder "a"`, `request "y.*": expected a routing key`, `responder "c": requests: expected at least one`} {
		if !strings.Contains(text, want) {
			t.Errorf("error lacks %q:\n%s", want, text)
		}
	}
}
