// Package mqtt makes an MQTT broker a source of events and a sink of what
// rules publish. A Client connects
// to the broker (MQTT 5, eclipse/paho.golang's autopaho: reconnects with
// backoff and jitter), subscribes to the configured topic filters with a
// persistent session, and hands each message to ingest as an event —
// its MQTT topic mapped to a ruled topic ("/" → ".", and a filter's "+"
// and "#" are a pattern's "*" and ">"), its JSON object payload the
// event, the MQTT topic kept on it as "mqtt_topic".
//
// No loss: a QoS 1 message is acknowledged to the broker only once ingest
// took it the way an HTTP 202 is (journaled when a durable rule takes
// it); one the process could not take — it stopped, or was killed — is
// not acknowledged, and the broker delivers it again to the session's
// next connection. The messages that come while ingest writes one group
// are handed to it together (a GroupTaker: their journal entries in one
// write), in order, and acknowledged in order once taken; a message the
// broker delivers again (a new connection) while its first delivery waits
// is taken once, and the new delivery acknowledged. While the worker
// queue is full the Client waits (a group being taken, at most MaxGroup
// more read ahead), so it stops reading: back-pressure on the broker,
// never a drop. A message that is not an event (a payload that is not a
// JSON object, when Config.NonJSON refuses it; a topic that maps to no
// ruled topic; over the size limit) is acknowledged and counted, with
// its reason: delivering it again would not make it one.
//
// The sink: a step's publish on a topic a Route's pattern matches is
// safe before its step counts as done: the broker took it, or the outbox
// — a hash in ruled's store, one per client id — has it, whichever comes
// first (OfferLater: the publish returns at once, and the step waits
// aside of its worker; Offer waits itself). The sender publishes the
// queued messages oldest first, at once, up to 64 waiting for their
// acknowledgements but one at a time on each topic (each topic keeps its
// order, as MQTT does; topics overtake each other). The writer writes
// what the broker has not taken 10 ms after a batch began (writeBehind),
// in one commit for the batch, and removes in batches what the broker
// took after it was written: a broker that is away, or a kill, loses
// nothing (at least once, each message carrying the step's idempotency
// key as an MQTT 5 user property). The outbox is bounded; a
// publish past the bound fails its step (ErrOutboxFull). A QoS 0 route
// marked at-most-once (Route.AtMostOnce) queues its messages in memory
// only: nothing written, and a kill loses what the broker has not taken.
//
// It refuses what is not the broker's side: what an event triggers is
// ingest's and the rules'; what is published beyond the routes stays on
// the bus. Goroutines: autopaho's connection manager and its handler, the
// outbox's sender, stopped by Close, and its writer while there is
// something to write (Close waits for it).
package mqtt
