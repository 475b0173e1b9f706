//! The marker types that name what a typed read reads, shared by arena accesses and reflect's handles.
//!
//! A typed read is parameterised by what it reads: a number by its Rust type (`i64`, `f32`,
//! `bool`, ...), everything else by one of these markers. The same names serve
//! [`Access`](crate::Access) (a checked slot of one layout, `Access<i64>`,
//! `Access<field::List<field::Bytes>>`) and the reflect crate's `Field` handles
//! (`Field<field::Str>`, `Field<field::Map>`); the markers are never constructed.

use std::marker::PhantomData;

/// A singular `string`, read as `&str`.
#[derive(Debug)]
pub enum Str {}
/// A singular `bytes` (or `string`), read as `&[u8]`.
#[derive(Debug)]
pub enum Bytes {}
/// A singular enum, read as its number (`i32`).
#[derive(Debug)]
pub enum Enum {}
/// A singular message or group.
#[derive(Debug)]
pub enum Message {}
/// A repeated field of `T` (a number, [`Str`], [`Bytes`], [`Enum`] or [`Message`]):
/// numbers and enums read as slices, the others as iterators.
#[derive(Debug)]
pub struct List<T>(PhantomData<T>);
/// A map field.
#[derive(Debug)]
pub enum Map {}
