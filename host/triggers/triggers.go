package triggers

import (
	"github.com/ruled-dev/ruled/host/rules"
)

// Index maps topics to the values of type T registered under rule patterns.
type Index[T any] struct {
	literal  map[string][]T
	wildcard []entry[T]
	cancels  map[string][]T
	cwild    []entry[T]
	awaits   map[string][]T
	awild    []entry[T]
}

type entry[T any] struct {
	p rules.Pattern
	v T
}

// Builder collects registrations for an Index.
type Builder[T any] struct{ ix Index[T] }

// NewBuilder starts an empty index.
func NewBuilder[T any]() *Builder[T] {
	return &Builder[T]{ix: Index[T]{literal: map[string][]T{}, cancels: map[string][]T{}, awaits: map[string][]T{}}}
}

// On registers v as triggered by topics matching p.
func (b *Builder[T]) On(p rules.Pattern, v T) {
	if p.Literal() {
		b.ix.literal[string(p)] = append(b.ix.literal[string(p)], v)
		return
	}
	b.ix.wildcard = append(b.ix.wildcard, entry[T]{p, v})
}

// CancelOn registers v as cancelled by topics matching p.
func (b *Builder[T]) CancelOn(p rules.Pattern, v T) {
	if p.Literal() {
		b.ix.cancels[string(p)] = append(b.ix.cancels[string(p)], v)
		return
	}
	b.ix.cwild = append(b.ix.cwild, entry[T]{p, v})
}

// AwaitOn registers v as waiting, in a wait-for step, for topics matching p.
func (b *Builder[T]) AwaitOn(p rules.Pattern, v T) {
	if p.Literal() {
		b.ix.awaits[string(p)] = append(b.ix.awaits[string(p)], v)
		return
	}
	b.ix.awild = append(b.ix.awild, entry[T]{p, v})
}

// Build returns the index. The builder must not be used afterwards.
func (b *Builder[T]) Build() *Index[T] { return &b.ix }

// Triggered returns what topic triggers, literal registrations first, in
// registration order. A value registered under two matching patterns comes
// back twice; callers register each rule's patterns once per rule (the rule
// format refuses duplicate patterns) but overlapping wildcards are the
// caller's to dedupe.
func (ix *Index[T]) Triggered(topic string) []T {
	return collect(ix.literal[topic], ix.wildcard, topic)
}

// Cancelled returns what topic may cancel.
func (ix *Index[T]) Cancelled(topic string) []T {
	return collect(ix.cancels[topic], ix.cwild, topic)
}

// Awaited returns what may wait for topic (a wait-for step's topic).
func (ix *Index[T]) Awaited(topic string) []T {
	return collect(ix.awaits[topic], ix.awild, topic)
}

func collect[T any](lit []T, wild []entry[T], topic string) []T {
	if len(wild) == 0 {
		return lit
	}
	out := lit
	copied := false
	for _, e := range wild {
		if e.p.Match(topic) {
			if !copied {
				out = append([]T(nil), lit...)
				copied = true
			}
			out = append(out, e.v)
		}
	}
	return out
}
