//! The software timer service (filled in below).
