package runtime

import (
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// acker acks the deliveries of a plain consumer's channel several at a
// time: a delivery whose handling ended in an ack waits, and one multiple
// ack of the highest tag settles it with every delivery before it, once
// all of those have ended too. One frame instead of one per message: one
// write less for the client and one less ack for the broker to process.
//
// It relies on what AMQP promises about delivery tags: a channel numbers
// its deliveries 1, 2, 3, ..., whichever consumer or basic.get takes
// them. A multiple ack of tag m settles every unsettled delivery of the
// channel up to m, so it is sent only once every tag up to m has ended
// here: acked by this acker, or settled on its own (a nack, a delivery of a
// probe) before its end was reported. A tag that never ends here holds
// the acks above it back; they then go one by one, as below.
//
// A waiting ack is sent:
//   - at once, with the others that can go, when a worker finds no
//     delivery waiting for it (the consumer is idle, or the broker is
//     waiting for acks to send more: nothing waits on the client then);
//   - when ackEvery of them wait, so that the broker's window refills
//     while the consumer still has work in hand;
//   - at the latest ackDelay after it began to wait (a slow handler
//     holding the head of the channel back, say);
//   - when the channel's consume ends (shutdown, pause, loss).
//
// Waiting acks that a delivery still in hand holds back go one by one
// when they are that many, or at idle or on the timer, rather than wait
// for it: a slow handler must not stall the prefetch window.
type acker struct {
	core  *core
	every int // send once this many acks wait

	mu    sync.Mutex
	ch    amqp.Acknowledger // the channel's, from its first delivery
	base  uint64            // every tag up to base has ended and is settled
	slots []ackSlot         // tags base+1, base+2, ...
	ready int               // slots[:ready] have all ended
	// readyWaiting of them wait for their ack, the last at lastWaiting.
	readyWaiting, lastWaiting int
	waiting                   int         // slots waiting for their ack
	timer                     *time.Timer // sends what waits, ackDelay after the first began to wait
	armed                     bool        // timer is set
}

// ackSlot is what became of one delivery tag of the channel.
type ackSlot struct {
	state      ackState
	e          Event  // counted once the ack is sent
	routingKey string // the fact's, for the count
}

type ackState uint8

const (
	unended ackState = iota // in hand, or not delivered yet
	toAck                   // ended in an ack that waits to be sent
	settled                 // acked or nacked on its own
)

// ackDelay is the longest an ack waits to be sent with others.
const ackDelay = 5 * time.Millisecond

// newAcker returns the acker of one channel with the given prefetch.
func newAcker(c *core, prefetch int) *acker {
	a := &acker{core: c, every: max(1, prefetch/4)}
	a.timer = time.AfterFunc(time.Hour, a.flush)
	a.timer.Stop()
	return a
}

// ack records that d ended in an ack counted as e, and sends what can go.
func (a *acker) ack(d amqp.Delivery, e Event, routingKey string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = d.Acknowledger
	}
	i, ok := a.slot(d.DeliveryTag)
	if !ok {
		// At or below base: every tag ends once, so this does not happen;
		// acked alone all the same.
		a.ackAlone(d.DeliveryTag, ackSlot{e: e, routingKey: routingKey})
		return
	}
	a.slots[i] = ackSlot{state: toAck, e: e, routingKey: routingKey}
	a.waiting++
	a.advance()
	switch {
	case a.waiting-a.readyWaiting >= a.every:
		a.send(true)
	case a.readyWaiting >= a.every:
		a.send(false)
	case !a.armed:
		a.armed = true
		a.timer.Reset(ackDelay)
	}
}

// ended records that the delivery with tag ended without this acker's
// ack: given back, or settled on its own. A tag ended already is left
// as it is.
func (a *acker) ended(tag uint64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, ok := a.slot(tag); ok && a.slots[i].state == unended {
		a.slots[i].state = settled
		a.advance()
		if a.readyWaiting >= a.every {
			a.send(false)
		}
	}
}

// flush sends every waiting ack.
func (a *acker) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.send(true)
}

// idle sends every waiting ack if any waits: called by a worker that is
// about to wait for a delivery.
func (a *acker) idle() {
	a.mu.Lock()
	if a.waiting > 0 {
		a.send(true)
	}
	a.mu.Unlock()
}

// slot returns the index of tag's slot, growing slots to hold it, and
// false for a tag at or below base.
func (a *acker) slot(tag uint64) (int, bool) {
	if tag <= a.base {
		return 0, false
	}
	i := int(tag - a.base - 1)
	for len(a.slots) <= i {
		a.slots = append(a.slots, ackSlot{})
	}
	return i, true
}

// advance extends ready over the slots that have ended.
func (a *acker) advance() {
	for a.ready < len(a.slots) && a.slots[a.ready].state != unended {
		if a.slots[a.ready].state == toAck {
			a.readyWaiting++
			a.lastWaiting = a.ready
		}
		a.ready++
	}
}

// ackAlone acks one tag on its own and counts it.
func (a *acker) ackAlone(tag uint64, s ackSlot) {
	if err := a.ch.Ack(tag, false); err != nil {
		// The channel is gone; the broker delivers it again.
		a.core.log.Debug("ack failed; the message will be redelivered", "delivery_tag", tag, "err", a.core.conn.redact(err))
		return
	}
	a.core.count(s.e, s.routingKey)
}

// send sends the waiting acks of slots[:ready] with one multiple ack and,
// with all, those above them one by one; then it drops the slots that are
// settled from the front. Called with mu held, so that two multiple acks
// never cross: a lower one after a higher would name a tag acked already,
// which the broker takes for an error and closes the channel.
func (a *acker) send(all bool) {
	if a.readyWaiting > 0 {
		tag := a.base + uint64(a.lastWaiting) + 1
		err := a.ch.Ack(tag, true)
		if err != nil {
			// The channel is gone; the broker delivers them again.
			a.core.log.Debug("ack failed; the messages will be redelivered", "delivery_tag", tag, "err", a.core.conn.redact(err))
		}
		for i := range a.slots[:a.lastWaiting+1] {
			if s := &a.slots[i]; s.state == toAck {
				if err == nil {
					a.core.count(s.e, s.routingKey)
				}
				s.state = settled
			}
		}
		a.waiting -= a.readyWaiting
		a.readyWaiting = 0
	}
	if all {
		for i := a.ready; i < len(a.slots) && a.waiting > 0; i++ {
			if s := &a.slots[i]; s.state == toAck {
				a.ackAlone(a.base+uint64(i)+1, *s)
				s.state = settled
				a.waiting--
			}
		}
	}
	// Every slot of ready is settled now: drop them.
	n := a.ready
	a.base += uint64(n)
	a.slots = append(a.slots[:0], a.slots[n:]...)
	a.ready = 0
	a.advance()
	if a.waiting == 0 && a.armed {
		a.armed = false
		a.timer.Stop()
	}
}

// stop sends what waits and stops the timer, at the end of the channel.
func (a *acker) stop() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.send(true)
	a.timer.Stop()
	a.armed = false
}

// ackSource is the source of a plain consumer whose acks an acker sends:
// a worker about to wait for a delivery first sends the acks that wait,
// and a delivery that ends without the acker's ack is marked ended.
type ackSource struct {
	feed <-chan amqp.Delivery
	acks *acker
}

func (s ackSource) next(<-chan struct{}) (amqp.Delivery, bool) {
	select {
	case d, ok := <-s.feed:
		if !ok {
			s.acks.idle()
		}
		return d, ok
	default:
	}
	s.acks.idle()
	d, ok := <-s.feed
	if !ok {
		s.acks.idle()
	}
	return d, ok
}

func (s ackSource) done(d amqp.Delivery) { s.acks.ended(d.DeliveryTag) }

func (ackSource) lost() <-chan string { return nil }
