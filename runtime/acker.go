package runtime

import (
	"sync"
	"sync/atomic"
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
//   - when half the prefetch waits with every delivery before it ended
//     (every), so that the broker's window refills while the consumer
//     still has work in hand;
//   - when a worker about to wait for a delivery finds the deliveries in
//     hand and the acks that wait filling the prefetch: the broker sends
//     nothing more until acks go (a worker that waits while the window has
//     room leaves them: the broker is sending as fast as it can, or the
//     queue is empty);
//   - ackDelay after it began to wait (the queue ran dry), or, when a
//     delivery in hand holds it back, once the timer has found that
//     delivery in hand twice (a slow handler);
//   - when the channel's feed ends (shutdown, pause, loss) and when the
//     channel closes.
//
// Acks that a delivery still in hand holds back go one by one rather than
// wait for it when the window is full, or when the timer finds nothing
// else to send twice running with that delivery still in hand: a slow
// handler must not stall the prefetch window. (Their slots stay until it
// ends: a few dozen bytes per delivery handled meanwhile.) Not sooner:
// on a busy machine the first delivery in hand is often a handler only
// held up for a few milliseconds (its thread not scheduled), and acking
// the hundreds behind it one by one cost a frame and a write each.
type acker struct {
	core     *core
	prefetch int
	every    int // send once this many acks wait
	// inHand counts the deliveries taken from the feed and not yet done
	// (see ackSource): with the acks that wait, what the broker counts
	// against the prefetch.
	inHand atomic.Int64

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
	// heldBy is the tag that held every waiting ack back when the timer
	// last fired, 0 for none: see tick.
	heldBy uint64
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

// uncounted is the event of an ack that counts none: a stream's fact of
// another consumer, skipped.
const uncounted Event = -1

// ackDelay is the longest an ack waits to be sent with others.
const ackDelay = 5 * time.Millisecond

// newAcker returns the acker of one channel with the given prefetch.
func newAcker(c *core, prefetch int) *acker {
	a := &acker{core: c, prefetch: prefetch, every: max(1, prefetch/2)}
	a.timer = time.AfterFunc(time.Hour, a.tick)
	a.timer.Stop()
	return a
}

// ack records that d ended in an ack counted as e, and sends what can go.
// Only a fact handled (or skipped as a duplicate) waits: the ack of one
// retried, held, deferred or poisoned, after its copy was confirmed, goes
// at once, so that it is counted when its copy is.
func (a *acker) ack(d amqp.Delivery, e Event, routingKey string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = d.Acknowledger
	}
	i, ok := a.slot(d.DeliveryTag)
	if !ok || e != Acked && e != DuplicateSkipped && e != uncounted {
		// (At or below base cannot be: every tag ends once.)
		a.ackAlone(d.DeliveryTag, ackSlot{e: e, routingKey: routingKey})
		if ok {
			a.slots[i].state = settled
			a.advance()
		}
		return
	}
	a.slots[i] = ackSlot{state: toAck, e: e, routingKey: routingKey}
	a.waiting++
	a.advance()
	if a.readyWaiting >= a.every {
		a.send(false)
		return
	}
	a.arm()
}

// arm sets the timer while acks wait, and stops it once none does.
func (a *acker) arm() {
	switch {
	case a.waiting > 0 && !a.armed:
		a.armed = true
		a.timer.Reset(ackDelay)
	case a.waiting == 0 && a.armed:
		a.armed = false
		a.timer.Stop()
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

// tick sends the acks that waited ackDelay: those one multiple ack can
// send, and, when a delivery in hand holds every one of them back and
// held them back at the last tick too, those one by one; that delivery's
// handler has been busy for ackDelay at least. (The first delivery in
// hand when the timer fires has most often just begun, with handlers
// that are quick: a multiple ack can send the acks once it is done.)
func (a *acker) tick() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = false
	head := a.base + uint64(a.ready) + 1 // the first tag that has not ended
	if a.readyWaiting == 0 && head != a.heldBy {
		a.heldBy = head
		a.arm()
		return
	}
	a.heldBy = 0
	a.send(a.readyWaiting == 0)
}

// idle is called by a worker that is about to wait for a delivery: if
// acks wait and the broker may be waiting for them (the deliveries in hand
// and the acks that wait fill the prefetch window), or the feed ended
// (last), it sends them now. Otherwise the broker is sending as fast as it
// can, or the queue is empty; they wait for more, or for the timer.
func (a *acker) idle(last bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting == 0 || !last && !a.starving() {
		return
	}
	a.send(last)
	if a.starving() {
		a.send(true)
	}
}

// starving reports that the deliveries in hand and the acks that wait
// fill the prefetch window: the broker sends nothing more until acks go.
func (a *acker) starving() bool {
	return a.waiting > 0 && int(a.inHand.Load())+a.waiting >= a.prefetch
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
	a.count(s)
}

// count counts the event of a slot acked.
func (a *acker) count(s ackSlot) {
	if s.e != uncounted {
		a.core.count(s.e, s.routingKey)
	}
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
					a.count(*s)
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
	if n := a.ready; n > 0 {
		a.base += uint64(n)
		a.slots = append(a.slots[:0], a.slots[n:]...)
		a.ready = 0
		a.advance()
	}
	a.arm()
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
		return s.took(d, ok)
	default:
	}
	s.acks.idle(false)
	d, ok := <-s.feed
	return s.took(d, ok)
}

func (s ackSource) took(d amqp.Delivery, ok bool) (amqp.Delivery, bool) {
	if !ok {
		s.acks.idle(true)
		return d, ok
	}
	s.acks.inHand.Add(1)
	return d, ok
}

func (s ackSource) done(d amqp.Delivery) {
	s.acks.inHand.Add(-1)
	s.acks.ended(d.DeliveryTag)
}

func (ackSource) lost() <-chan string { return nil }
