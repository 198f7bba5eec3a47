package dispatch

import (
	"context"
	"errors"
	"fmt"
	"go/token"
	"reflect"
	"strings"
)

// Handler is one step of a call: the method itself, or the rest of the
// interceptor chain. args and reply are pointers (*A and *R) on every path.
type Handler func(ctx context.Context, args, reply any) error

// Interceptor wraps every call on every path. It sees the method name
// ("Service.Method"), the decoded arguments and the reply to fill, and calls
// next to go on; what it returns is what the caller gets. Interceptors run in
// the order given to WithInterceptors, the first outermost.
type Interceptor func(ctx context.Context, method string, args, reply any, next Handler) error

// method is one callable method, however it was registered.
type method struct {
	name string
	// newPair returns a new *A and *R in one allocation.
	newPair func() (args, reply any)
	// direct converts the caller's args to what the handler takes without
	// copying, when the types allow; ok is false otherwise.
	direct func(args any) (a any, ok bool)
	// zeroReply reports whether reply is a *R and, if so, zeroes it.
	zeroReply func(reply any) bool
	call      Handler // the method alone
	handler   Handler // the method inside the interceptor chain
	// takesCtx is false for a net/rpc-shape method without a context
	// parameter; with no interceptors either, nobody sees the handler's
	// context and the shortcut need not make one.
	takesCtx bool
	seesCtx  bool    // takesCtx, or the server has interceptors
	srv      *Server // the Server it is registered with

	// borrows: registered with Borrows, so a ShortcutDirect caller passes
	// its own values.
	borrows bool
	// copyArgs deep-copies the caller's *A into the handler's *A, for a
	// direct call that may return before the handler does; set for every
	// method that borrows (planArgs).
	copyArgs func(dst, src any) error
	// moveReply sets *dst = *src, both *R.
	moveReply func(dst, src any)
	argType   reflect.Type // A

	// stream is set for a streaming method (HandleStream), which has none
	// of the unary fields above but name, takesCtx and borrows.
	stream *streamMethod
	// encoding is WithEncoding's, what the raw bodies hold; nil when not
	// said.
	encoding *Encoding

	// pace is how fast the method's calls run inline (server_inline.go).
	pace inlinePace
}

var (
	typeOfError   = reflect.TypeFor[error]()
	typeOfContext = reflect.TypeFor[context.Context]()
)

// Handle registers fn as the method name ("Service.Method") of srv. The call
// needs no reflection: it is the fastest way to serve a method, above all on
// the shortcut. The options may say that fn borrows its arguments (Borrows).
// Like Register, it may be called while srv serves, until Shutdown or Close
// (see the package doc, Registration).
func Handle[A, R any](srv *Server, name string, fn func(ctx context.Context, args *A, reply *R) error, opts ...RegisterOption) error {
	if fn == nil {
		return fmt.Errorf("dispatch: Handle %s: nil function", name)
	}
	ro, err := registerOpts(opts)
	if err != nil {
		return fmt.Errorf("dispatch: Handle %s: %w", name, err)
	}
	m := &method{
		name: name,
		newPair: func() (any, any) {
			p := new(struct {
				a A
				r R
			})
			return &p.a, &p.r
		},
		direct: func(args any) (any, bool) {
			switch a := args.(type) {
			case *A:
				if a == nil {
					return new(A), true
				}
				return a, true
			case A:
				p := new(A)
				*p = a
				return p, true
			case nil:
				return new(A), true
			}
			return nil, false
		},
		zeroReply: func(reply any) bool {
			r, ok := reply.(*R)
			if ok {
				var zero R
				*r = zero
			}
			return ok
		},
		call: func(ctx context.Context, args, reply any) error {
			return fn(ctx, args.(*A), reply.(*R))
		},
		takesCtx: true,
		moveReply: func(dst, src any) {
			*dst.(*R) = *src.(*R)
		},
	}
	dot := strings.LastIndex(name, ".")
	short := name[dot+1:]
	if err := ro.check(name[:max(dot, 0)], []string{short}); err != nil {
		return fmt.Errorf("dispatch: Handle %s: %w", name, err)
	}
	if err := ro.checkEncoding(reflect.TypeFor[A](), reflect.TypeFor[R]()); err != nil {
		return fmt.Errorf("dispatch: Handle %s: %w", name, err)
	}
	m.encoding = ro.encoding
	if ro.borrowing(short) {
		if err := m.planArgs(reflect.TypeFor[A](), func(dst, src any) { *dst.(*A) = *src.(*A) }); err != nil {
			return err
		}
	}
	return srv.add(m)
}

// methodShape is the shape Register looks for, for its error messages.
const methodShape = "func (t *T) M([ctx context.Context,] args A, reply *R) error"

// reflectMethod builds a method from a receiver's method of net/rpc's shape
// (args A or *A, reply *R, returning error), optionally taking a
// context.Context first. For an exported method of any other shape it
// returns nil and why; for an unexported one, nil and "".
func reflectMethod(service string, rcvr reflect.Value, m reflect.Method) (*method, string) {
	if !m.IsExported() {
		return nil, ""
	}
	t := m.Type
	withCtx := t.NumIn() == 4 && t.In(1) == typeOfContext
	switch {
	case !(t.NumIn() == 3 || withCtx):
		return nil, fmt.Sprintf("takes %d arguments; needs args and reply, optionally after a context.Context", t.NumIn()-1)
	case t.NumOut() != 1:
		return nil, fmt.Sprintf("returns %d values; needs exactly one, an error", t.NumOut())
	case t.Out(0) != typeOfError:
		return nil, fmt.Sprintf("returns %s, not error", t.Out(0))
	}
	first := 1
	if withCtx {
		first = 2
	}
	argT, replyT := t.In(first), t.In(first+1)
	switch {
	case replyT.Kind() != reflect.Pointer:
		return nil, fmt.Sprintf("reply type %s is not a pointer", replyT)
	case !exportedOrBuiltin(argT):
		return nil, fmt.Sprintf("argument type %s is not exported", argT)
	case !exportedOrBuiltin(replyT):
		return nil, fmt.Sprintf("reply type %s is not exported", replyT)
	}
	argsPtr := argT.Kind() == reflect.Pointer
	a := argT
	if argsPtr {
		a = argT.Elem()
	}
	ptrA := reflect.PointerTo(a)
	pair := reflect.StructOf([]reflect.StructField{{Name: "A", Type: a}, {Name: "R", Type: replyT.Elem()}})
	fn := m.Func
	return &method{
		name: service + "." + m.Name,
		newPair: func() (any, any) {
			p := reflect.New(pair).Elem()
			return p.Field(0).Addr().Interface(), p.Field(1).Addr().Interface()
		},
		direct: func(args any) (any, bool) {
			if args == nil {
				return reflect.New(a).Interface(), true
			}
			v := reflect.ValueOf(args)
			switch v.Type() {
			case ptrA:
				if v.IsNil() {
					return reflect.New(a).Interface(), true
				}
				return args, true
			case a:
				p := reflect.New(a)
				p.Elem().Set(v)
				return p.Interface(), true
			}
			return nil, false
		},
		zeroReply: func(reply any) bool {
			v := reflect.ValueOf(reply)
			if v.Type() != replyT {
				return false
			}
			v.Elem().SetZero()
			return true
		},
		call: func(ctx context.Context, args, reply any) error {
			av := reflect.ValueOf(args) // *A
			if !argsPtr {
				av = av.Elem()
			}
			var in [4]reflect.Value // an array, so the arguments need no allocation
			n := 0
			in[n], n = rcvr, n+1
			if withCtx {
				in[n], n = reflect.ValueOf(ctx), n+1
			}
			in[n], in[n+1] = av, reflect.ValueOf(reply)
			out := fn.Call(in[:n+2])
			if out[0].IsNil() { // no boxing of a nil error
				return nil
			}
			return out[0].Interface().(error)
		},
		takesCtx: withCtx,
		argType:  a,
		moveReply: func(dst, src any) {
			reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
		},
	}, ""
}

func exportedOrBuiltin(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return token.IsExported(t.Name()) || t.PkgPath() == ""
}

// Register publishes the methods of rcvr that have net/rpc's shape —
// func (t *T) M(args A, reply *R) error, with A a value or a pointer — or
// the same with a context.Context first, under the name of rcvr's type.
// Other methods are ignored. It is an error if there are none, or if the
// service name is taken. The options may say that methods borrow their
// arguments (Borrows).
//
// Register may be called at any time before Shutdown or Close, while the
// Server serves included: a call finds the methods once Register has
// returned (before, it fails with CodeNotFound), and the calls of methods
// registered earlier go on meanwhile. This is how a program whose services
// call each other through a Client of its own Server is wired: start the
// Server, dial it, then register the services that call it. After Shutdown
// or Close it fails with ErrServerClosed.
func (s *Server) Register(rcvr any, opts ...RegisterOption) error {
	return s.register(rcvr, "", false, opts)
}

// RegisterName is Register with the service name given. Like Register, it
// may be called while the Server serves, until Shutdown or Close.
func (s *Server) RegisterName(name string, rcvr any, opts ...RegisterOption) error {
	return s.register(rcvr, name, true, opts)
}

func (s *Server) register(rcvr any, name string, useName bool, opts []RegisterOption) error {
	ro, err := registerOpts(opts)
	if err != nil {
		return err
	}
	if ro.encoding != nil {
		return errEncodingOne
	}
	if rcvr == nil {
		return errors.New("dispatch: Register of nil")
	}
	v := reflect.ValueOf(rcvr)
	if !useName {
		name = reflect.Indirect(v).Type().Name()
	}
	if name == "" || (!useName && !token.IsExported(name)) {
		return fmt.Errorf("dispatch: Register of a %s: a service is a value of a named, exported type "+
			"with methods of the form %s (or use RegisterName)", v.Type(), methodShape)
	}
	if strings.Contains(name, ".") {
		return fmt.Errorf("dispatch: service name %q contains a dot", name)
	}
	var ms []*method
	for i := range v.Type().NumMethod() {
		mt := v.Type().Method(i)
		m, why := reflectMethod(name, v, mt)
		if m != nil {
			ms = append(ms, m)
		} else if why != "" {
			// As net/rpc reports them; once, at registration.
			s.opts.logger.Warn("dispatch: Register: method ignored", "method", name+"."+mt.Name, "why", why)
		}
	}
	if len(ms) == 0 {
		hint := ""
		if v.Kind() != reflect.Pointer {
			if n := reflect.PointerTo(v.Type()).NumMethod(); n > v.Type().NumMethod() {
				hint = "; its methods are on *" + v.Type().String() + ": pass a pointer to a value of that type"
			}
		}
		return fmt.Errorf("dispatch: type %s has no methods of the form %s%s", v.Type(), methodShape, hint)
	}
	shorts := make([]string, len(ms))
	for i, m := range ms {
		shorts[i] = m.name[len(name)+1:]
	}
	if err := ro.check(name, shorts); err != nil {
		return err
	}
	for i, m := range ms {
		if ro.borrowing(shorts[i]) {
			err := m.planArgs(m.argType, func(dst, src any) {
				reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
			})
			if err != nil {
				return err
			}
		}
	}
	return s.add(ms...)
}
