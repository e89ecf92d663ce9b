// Package gguf writes GGUF v3 files, the model format llama.cpp loads.
//
// The writer is deliberately small: it covers the metadata value types and the
// tensor types (F32, F16) that a generated test model needs, and it streams
// tensor data so a model larger than memory-friendly sizes never has to be
// materialised at once. The layout follows the GGUF specification
// (ggml/docs/gguf.md): header, metadata key/values, tensor infos, padding to
// the alignment, then the tensor data, each tensor starting on an aligned
// offset relative to the start of the data section.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Magic is "GGUF" read as a little-endian uint32.
const Magic uint32 = 0x46554747

// Version is the GGUF format version this package writes.
const Version uint32 = 3

// DefaultAlignment is the alignment readers assume when general.alignment is
// absent.
const DefaultAlignment = 32

// ValueType is the on-disk tag of a metadata value.
type ValueType uint32

// Metadata value types, numbered as in the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// TensorType is a ggml tensor element type.
type TensorType uint32

// Tensor types the writer can encode, numbered as ggml_type.
const (
	TensorF32 TensorType = 0
	TensorF16 TensorType = 1
)

func (t TensorType) elemSize() (int, error) {
	switch t {
	case TensorF32:
		return 4, nil
	case TensorF16:
		return 2, nil
	}
	return 0, fmt.Errorf("tensor type %d is not supported by this writer (F32 and F16 are)", t)
}

// KV is one metadata entry. Value must be one of: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64, or a slice of
// string, float32, int32 or uint32 (written as a GGUF array).
type KV struct {
	Key   string
	Value any
}

// Tensor describes one tensor. Shape is in ggml order: Shape[0] is the
// contiguous (innermost) dimension, so a weight applied as y = W·x with x of
// length n_in and y of length n_out has Shape {n_in, n_out}.
type Tensor struct {
	Name  string
	Shape []uint64
	Type  TensorType
	// Values returns the elements in storage order; it is called once, while
	// the file is written, so generated data lives only as long as its write.
	Values func() []float32
}

// Elements is the number of elements the shape holds.
func (t Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes is the size of the tensor's data, without padding.
func (t Tensor) Bytes() (uint64, error) {
	es, err := t.Type.elemSize()
	if err != nil {
		return 0, err
	}
	return t.Elements() * uint64(es), nil
}

// File is a GGUF document to be written.
type File struct {
	// Alignment of the data section and of every tensor in it; 0 means
	// DefaultAlignment. A non-default value is recorded as general.alignment so
	// readers find the tensors.
	Alignment uint32
	Metadata  []KV
	Tensors   []Tensor
}

func (f *File) alignment() uint64 {
	if f.Alignment == 0 {
		return DefaultAlignment
	}
	return uint64(f.Alignment)
}

// Offsets returns each tensor's data offset relative to the start of the data
// section, as recorded in the tensor infos.
func (f *File) Offsets() ([]uint64, error) {
	align := f.alignment()
	offs := make([]uint64, len(f.Tensors))
	var off uint64
	for i, t := range f.Tensors {
		n, err := t.Bytes()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		offs[i] = off
		off = alignUp(off+n, align)
	}
	return offs, nil
}

func alignUp(n, align uint64) uint64 {
	return (n + align - 1) / align * align
}

// WriteTo writes the whole file. It validates names, shapes and value types
// before writing anything, so an invalid File never leaves a partial header
// that looks valid.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	align := f.alignment()
	if align&(align-1) != 0 {
		return 0, fmt.Errorf("alignment %d is not a power of two", align)
	}
	meta := f.Metadata
	if f.Alignment != 0 && f.Alignment != DefaultAlignment {
		meta = append(append([]KV(nil), meta...), KV{Key: "general.alignment", Value: f.Alignment})
	}
	if err := f.validate(meta); err != nil {
		return 0, err
	}
	offs, err := f.Offsets()
	if err != nil {
		return 0, err
	}

	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	e := &encoder{w: cw}
	e.u32(Magic)
	e.u32(Version)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(meta)))
	for _, kv := range meta {
		e.str(kv.Key)
		e.value(kv.Value)
	}
	for i, t := range f.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offs[i])
	}
	e.pad(align)

	dataStart := cw.n
	for i, t := range f.Tensors {
		if e.err != nil {
			break
		}
		if got := uint64(cw.n - dataStart); got != offs[i] {
			return cw.n, fmt.Errorf("tensor %q: internal offset mismatch: at %d, want %d", t.Name, got, offs[i])
		}
		vals := t.Values()
		if uint64(len(vals)) != t.Elements() {
			return cw.n, fmt.Errorf("tensor %q: Values returned %d elements, shape %v holds %d", t.Name, len(vals), t.Shape, t.Elements())
		}
		e.tensorData(t.Type, vals)
		e.pad(align)
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("write gguf: %w", e.err)
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil {
		return cw.n, fmt.Errorf("write gguf: %w", err)
	}
	return cw.n, nil
}

func (f *File) validate(meta []KV) error {
	seen := make(map[string]bool, len(meta))
	for _, kv := range meta {
		if kv.Key == "" {
			return errors.New("metadata key is empty")
		}
		if seen[kv.Key] {
			return fmt.Errorf("metadata key %q appears twice", kv.Key)
		}
		seen[kv.Key] = true
		if _, err := typeOf(kv.Value); err != nil {
			return fmt.Errorf("metadata %q: %w", kv.Key, err)
		}
	}
	names := make(map[string]bool, len(f.Tensors))
	for _, t := range f.Tensors {
		// ggml stores tensor names in a fixed 64-byte buffer including the NUL.
		if t.Name == "" || len(t.Name) >= 64 {
			return fmt.Errorf("tensor name %q must be 1..63 bytes", t.Name)
		}
		if names[t.Name] {
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Shape) == 0 || len(t.Shape) > 4 {
			return fmt.Errorf("tensor %q: %d dimensions, ggml supports 1..4", t.Name, len(t.Shape))
		}
		for _, d := range t.Shape {
			if d == 0 {
				return fmt.Errorf("tensor %q: zero dimension in shape %v", t.Name, t.Shape)
			}
		}
		if t.Values == nil {
			return fmt.Errorf("tensor %q has no Values", t.Name)
		}
		if _, err := t.Type.elemSize(); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	return nil
}

func typeOf(v any) (ValueType, error) {
	switch v.(type) {
	case uint8:
		return TypeUint8, nil
	case int8:
		return TypeInt8, nil
	case uint16:
		return TypeUint16, nil
	case int16:
		return TypeInt16, nil
	case uint32:
		return TypeUint32, nil
	case int32:
		return TypeInt32, nil
	case float32:
		return TypeFloat32, nil
	case bool:
		return TypeBool, nil
	case string:
		return TypeString, nil
	case uint64:
		return TypeUint64, nil
	case int64:
		return TypeInt64, nil
	case float64:
		return TypeFloat64, nil
	case []string, []float32, []int32, []uint32:
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder keeps the first error so the write sequence reads straight through.
type encoder struct {
	w   *countingWriter
	buf [8]byte
	err error
}

func (e *encoder) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u8(v uint8) { e.write([]byte{v}) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:2], v)
	e.write(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.write(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.write(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.write([]byte(s))
}

func (e *encoder) pad(align uint64) {
	n := uint64(e.w.n)
	if rem := alignUp(n, align) - n; rem > 0 {
		e.write(make([]byte, rem))
	}
}

func (e *encoder) value(v any) {
	t, _ := typeOf(v) // validated before writing
	e.u32(uint32(t))
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case []string:
		e.u32(uint32(TypeString))
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []float32:
		e.u32(uint32(TypeFloat32))
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.u32(uint32(TypeInt32))
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	case []uint32:
		e.u32(uint32(TypeUint32))
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(i)
		}
	}
}

func (e *encoder) tensorData(t TensorType, vals []float32) {
	const chunk = 1 << 16
	es, _ := t.elemSize()
	out := make([]byte, chunk*es)
	for start := 0; start < len(vals) && e.err == nil; start += chunk {
		part := vals[start:min(start+chunk, len(vals))]
		b := out[:len(part)*es]
		for i, v := range part {
			switch t {
			case TensorF32:
				binary.LittleEndian.PutUint32(b[i*4:], math.Float32bits(v))
			case TensorF16:
				binary.LittleEndian.PutUint16(b[i*2:], Float16Bits(v))
			}
		}
		e.write(b)
	}
}

// Float16Bits converts f to IEEE 754 binary16 with round-to-nearest-even, the
// rounding ggml's own F32→F16 conversion uses, so values survive a round trip
// through llama.cpp tooling unchanged. Out-of-range values become ±Inf; NaN
// stays NaN.
func Float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff

	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127+15 >= 0x1f: // overflow
		return sign | 0x7c00
	case exp-127+15 <= 0: // subnormal half or zero
		e := exp - 127 + 15
		if e < -10 {
			return sign
		}
		m := mant | 0x800000 // implicit leading bit
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	e := uint32(exp - 127 + 15)
	half := e<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // a carry into the exponent is still the correctly rounded value
	}
	return sign | uint16(half)
}
