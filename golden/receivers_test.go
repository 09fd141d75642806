package golden_test

import (
	"encoding/json"
	"reflect"
	"testing"

	factroots "github.com/warrenbus/warren/golden/fact-roots/want"
)

// A fact's type offers the same methods on the same receivers whether
// warren wrote it as a codec.Shape (AuditLogged), spelled out its methods
// (PushReceived) or wrote a union (PaymentSettled): Validate on the
// pointer, MarshalJSON on the value, so that calling code compiles the
// same after a schema edit that changes how warren writes the fact, and
// json.Marshal of a value still goes through the codec.
func TestFactMethodsAgreeWhicheverWayWritten(t *testing.T) {
	sha := factroots.Sha("0123456789abcdef0123456789abcdef01234567")
	cases := []struct {
		name  string
		value any    // a valid value, not a pointer
		want  string // what MarshalJSON writes
	}{
		{"shape", factroots.AuditLogged{Actor: "ada"}, `{"actor":"ada"}`},
		{"spelled out", factroots.PushReceived{Ref: "main", After: sha, Repository: factroots.Repository{ID: 1, FullName: "a/b"}}, `{"ref":"main","after":"` + string(sha) + `","repository":{"id":1,"full_name":"a/b"}}`},
		// encoding/json by the struct's fields would write
		// {"CardSettlement":{...},"BankSettlement":null}.
		{"union", factroots.PaymentSettled{CardSettlement: &factroots.CardSettlement{CardLast4: "4242"}}, `{"card_last4":"4242"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typ := reflect.TypeOf(tc.value)
			if _, ok := typ.MethodByName("Validate"); ok {
				t.Errorf("%s has Validate on the value; the rule is the pointer", typ)
			}
			if _, ok := typ.MethodByName("MarshalJSON"); !ok {
				t.Errorf("%s has no MarshalJSON on the value: json.Marshal(v) would write its fields by their tags", typ)
			}
			got, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("json.Marshal of the value = %s, want %s", got, tc.want)
			}
			p := reflect.New(typ)
			p.Elem().Set(reflect.ValueOf(tc.value))
			v, ok := p.Interface().(interface{ Validate() error })
			if !ok {
				t.Fatalf("*%s is not an interface{ Validate() error }", typ)
			}
			if err := v.Validate(); err != nil {
				t.Errorf("Validate of a valid %s: %v", typ, err)
			}
		})
	}
}
