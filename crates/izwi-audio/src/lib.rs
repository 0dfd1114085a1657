//! Audio in and out for Izwi.
