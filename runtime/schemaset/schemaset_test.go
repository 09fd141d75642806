package schemaset

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

var files = map[string]string{
	"order.json": `{"type": "object", "required": ["id", "total"], "properties": {
		"id": {"type": "string", "format": "uuid"},
		"total": {"$ref": "common/money.json"},
		"pay": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}`,
	"common/money.json": `{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer", "minimum": 0}}}`,
}

func TestValidate(t *testing.T) {
	s := NewWith(files, Options{AssertFormats: []string{"uuid"}})
	if err := s.Validate("order.json", []byte(`{"id": "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11", "total": {"amount": 5}}`)); err != nil {
		t.Fatalf("valid payload: %v", err)
	}
	err := s.Validate("order.json", []byte(`{"id": "nope", "total": {"amount": -1}}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *ValidationError", err)
	}
	msg := err.Error()
	for _, want := range []string{"does not match schema order.json", "/id: ", "uuid", "/total/amount: ", "minimum"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if err := s.Validate("order.json", []byte(`{"id": `)); err == nil || errors.As(err, &ve) {
		t.Errorf("malformed JSON: %v, want a non-validation error", err)
	}
	if err := s.Validate("missing.json", []byte(`{}`)); err == nil {
		t.Error("unknown schema validated")
	}
	if err := s.Validator("common/money.json")([]byte(`{"amount": 1}`)); err != nil {
		t.Errorf("Validator: %v", err)
	}
	if err := s.ValidateValue("common/money.json", map[string]any{"amount": "x"}); err == nil {
		t.Error("ValidateValue accepted a string amount")
	}
}

func TestMatchesAndDecodeBranch(t *testing.T) {
	s := New(files)
	ok, err := s.Matches("order.json#/properties/pay/oneOf/1", []byte(`12`))
	if err != nil || !ok {
		t.Errorf("Matches(integer branch, 12) = %v, %v", ok, err)
	}
	ok, err = s.Matches("order.json#/properties/pay/oneOf/1", []byte(`"12"`))
	if err != nil || ok {
		t.Errorf("Matches(integer branch, \"12\") = %v, %v", ok, err)
	}
	var n int64
	if ok, err := s.DecodeBranch("Pay", "order.json#/properties/pay/oneOf/1", []byte(`12`), &n); !ok || err != nil || n != 12 {
		t.Errorf("DecodeBranch = %v, %v, %d", ok, err, n)
	}
	if _, err := s.Matches("order.json#/nothing/here", []byte(`1`)); err == nil {
		t.Error("Matches on a missing location gave no error")
	}
}

// TestConcurrentValidate runs with -race in CI: compiling happens once
// under a lock, validating in parallel.
func TestConcurrentValidate(t *testing.T) {
	s := New(files)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loc := "order.json"
			if i%2 == 0 {
				loc = "common/money.json"
			}
			errs <- s.Validate(loc, []byte(`{"id": "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11", "total": {"amount": 1}, "amount": 1}`))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestMarshalUnion(t *testing.T) {
	s, b := "x", int64(1)
	if got, err := MarshalUnion("U", true, []any{&s}); err != nil || string(got) != `"x"` {
		t.Errorf("one branch: %s, %v", got, err)
	}
	if _, err := MarshalUnion("U", true, []any{&s, &b}); err == nil {
		t.Error("oneOf with two branches encoded")
	}
	if _, err := MarshalUnion("U", false, nil); err == nil {
		t.Error("union with no branch encoded")
	}
	type email struct {
		Email string `json:"email"`
	}
	type phone struct {
		Phone string `json:"phone"`
	}
	got, err := MarshalUnion("U", false, []any{email{"a@b"}, phone{"1"}})
	if err != nil || string(got) != `{"email":"a@b","phone":"1"}` {
		t.Errorf("anyOf objects: %s, %v", got, err)
	}
	if _, err := MarshalUnion("U", false, []any{&s, &b}); err == nil {
		t.Error("anyOf with disagreeing scalars encoded")
	}
	if err := CheckUnion("U", true, true, true); err == nil {
		t.Error("CheckUnion accepted two oneOf matches")
	}
	if err := CheckUnion("U", false, false, false); err == nil {
		t.Error("CheckUnion accepted no match")
	}
	if err := CheckUnion("U", false, true, true); err != nil {
		t.Errorf("CheckUnion(anyOf, 2 matches) = %v", err)
	}
}

func TestExtraProperties(t *testing.T) {
	known := []string{"a"}
	got, err := MarshalObject([]byte(`{"a":1}`), map[string]int{"b": 2}, known)
	if err != nil || string(got) != `{"a":1,"b":2}` {
		t.Errorf("MarshalObject = %s, %v", got, err)
	}
	got, err = MarshalObject([]byte(`{}`), map[string]int{"b": 2}, known)
	if err != nil || string(got) != `{"b":2}` {
		t.Errorf("MarshalObject(empty) = %s, %v", got, err)
	}
	if _, err := MarshalObject([]byte(`{"a":1}`), map[string]int{"a": 2}, known); err == nil {
		t.Error("an extra property shadowing a declared one encoded")
	}
	var extra map[string]int
	if err := UnmarshalExtra([]byte(`{"a":1,"b":2,"c":3}`), &extra, known); err != nil || len(extra) != 2 || extra["c"] != 3 {
		t.Errorf("UnmarshalExtra = %v, %v", extra, err)
	}
	if err := UnmarshalExtra([]byte(`{"a":1}`), &extra, known); err != nil || extra != nil {
		t.Errorf("UnmarshalExtra without extras = %v, %v; want nil", extra, err)
	}
	if err := UnmarshalExtra([]byte(`{"b":"x"}`), &extra, known); err == nil {
		t.Error("UnmarshalExtra accepted a string for an int property")
	}
}
