package resolver

import "errors"

// DNS resolves targets through DNS. (Placeholder: being written.)
type DNS struct{}

// Resolve is not written yet.
func (DNS) Resolve(target string, report func([]string, error)) (Watch, error) {
	return nil, errors.New("resolver: DNS not written yet")
}
