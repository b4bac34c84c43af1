//! The intrinsic modules (`iso_fortran_env`, `iso_c_binding`, …): their
//! names are known without source, and so are the values of their scalar
//! named constants on gfortran/x86-64, which dfort uses as kinds and as
//! integer or character constants.

/// Modules known without source (`USE, INTRINSIC` or a plain USE of them).
pub const INTRINSIC_MODULES: &[&str] = &[
    "iso_fortran_env",
    "iso_c_binding",
    "ieee_arithmetic",
    "ieee_exceptions",
    "ieee_features",
    "omp_lib",
    "mpi",
];

pub fn is_intrinsic_module(module: &str) -> bool {
    INTRINSIC_MODULES.contains(&module)
}

/// The value of a scalar named constant of an intrinsic module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstantValue {
    /// A default integer.
    Int(i64),
    /// A character of length 1 (`c_null_char`, `c_new_line`, …).
    Char(u8),
}

/// `module`'s scalar named constant `name` (lower case), as gfortran on
/// x86-64 defines it.
pub fn named_constant(module: &str, name: &str) -> Option<ConstantValue> {
    use ConstantValue::{Char, Int};
    match module {
        "iso_fortran_env" => Some(Int(match name {
            "int8" => 1,
            "int16" => 2,
            "int32" => 4,
            "int64" => 8,
            "real32" => 4,
            "real64" => 8,
            "real128" => 16,
            "input_unit" => 5,
            "output_unit" => 6,
            "error_unit" => 0,
            "iostat_end" => -1,
            "iostat_eor" => -2,
            "numeric_storage_size" => 32,
            "character_storage_size" | "file_storage_size" => 8,
            "atomic_int_kind" | "atomic_logical_kind" => 4,
            _ => return None,
        })),
        "iso_c_binding" => Some(match name {
            "c_null_char" => Char(0),
            "c_alert" => Char(7),
            "c_backspace" => Char(8),
            "c_horizontal_tab" => Char(9),
            "c_new_line" => Char(10),
            "c_vertical_tab" => Char(11),
            "c_form_feed" => Char(12),
            "c_carriage_return" => Char(13),
            _ => Int(i64::from(kind_of_c_name(name)?)),
        }),
        _ => None,
    }
}

fn kind_of_c_name(name: &str) -> Option<u32> {
    Some(match name {
        "c_signed_char" | "c_int8_t" | "c_int_least8_t" | "c_int_fast8_t" | "c_bool" | "c_char" => {
            1
        }
        "c_short" | "c_int16_t" | "c_int_least16_t" => 2,
        "c_int" | "c_int32_t" | "c_int_least32_t" | "c_float" | "c_float_complex" => 4,
        "c_long" | "c_long_long" | "c_size_t" | "c_int64_t" | "c_int_least64_t"
        | "c_int_fast16_t" | "c_int_fast32_t" | "c_int_fast64_t" | "c_intmax_t" | "c_intptr_t"
        | "c_ptrdiff_t" | "c_double" | "c_double_complex" => 8,
        "c_long_double" | "c_long_double_complex" => 10,
        "c_int128_t" | "c_float128" | "c_float128_complex" => 16,
        _ => return None,
    })
}

/// Kind values of the named constants of the intrinsic modules, by name
/// alone (`real(real64)` before linking knows where `real64` comes from).
pub fn well_known_kind(name: &str) -> Option<u32> {
    match name {
        "real32" | "int32" => Some(4),
        "real64" | "int64" => Some(8),
        "real128" => Some(16),
        "int16" => Some(2),
        "int8" => Some(1),
        _ => kind_of_c_name(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_and_kinds() {
        assert_eq!(
            named_constant("iso_fortran_env", "real64"),
            Some(ConstantValue::Int(8))
        );
        assert_eq!(
            named_constant("iso_fortran_env", "output_unit"),
            Some(ConstantValue::Int(6))
        );
        assert_eq!(
            named_constant("iso_c_binding", "c_double"),
            Some(ConstantValue::Int(8))
        );
        assert_eq!(
            named_constant("iso_c_binding", "c_null_char"),
            Some(ConstantValue::Char(0))
        );
        assert_eq!(named_constant("iso_c_binding", "real64"), None);
        assert_eq!(named_constant("iso_fortran_env", "c_int"), None);
        assert_eq!(well_known_kind("c_long_double"), Some(10));
        assert_eq!(well_known_kind("dp"), None);
    }
}
