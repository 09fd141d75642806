package topology

import (
	"strings"
	"testing"
	"time"
)

// A batch consumer's default prefetch lets every handler hold a full
// batch; a prefetch set below the size is refused.
func TestBatchPrefetch(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "loader", Bindings: []string{"#"}, Concurrency: 3, Batch: &Batch{Size: 50, Wait: time.Second}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := top.Consumers[0]
	if !c.Batched() || c.Prefetch != 150 || c.Batch != (Batch{Size: 50, Wait: time.Second}) {
		t.Errorf("consumer %+v: want batched with prefetch 150", c)
	}
	_, err = Build(Spec{Consumers: []ConsumerSpec{{Name: "loader", Bindings: []string{"#"}, Prefetch: 10, Batch: &Batch{Size: 50, Wait: time.Second}}}})
	if err == nil || !strings.Contains(err.Error(), "batch size 50: expected at most the prefetch (10)") {
		t.Errorf("err = %v, want the size refused beside the prefetch", err)
	}
	if _, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "plain", Bindings: []string{"#"}}}}); err != nil {
		t.Fatal(err)
	}
}
