/* test_float_class.c: float_class.h's rule at its two edges, worked by hand
 * from the float32 format (8 exponent bits, 23 stored mantissa bits):
 *
 *   the smallest subnormal is 2^-149; a double rounds to nearest, ties to
 *   even, so 2^-150 (exactly half way, between 0 and 2^-149 whose last bit
 *   is odd) rounds to 0, and anything above it to 2^-149;
 *   the largest float32 is (2 - 2^-23) x 2^127 = 0x1.fffffep127; half its
 *   ulp (2^104 / 2 = 2^103) above it, 0x1.ffffffp127, is the tie between it
 *   (odd mantissa) and 2^128 (infinity): it rounds to infinity, anything
 *   below it to the largest.
 *
 * Then the command line's parse of the same values as text, through the
 * program: refused in one line naming the option, exit 2. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "ref/util/float_class.h"
#include "tests/helpers.h"

static void keeps(double d, float want) {
    float f = -1;
    const char *why = float_narrow(d, &f);
    cr_expect_null(why, "%a: %s", d, why ? why : "");
    cr_expect(f == want || (isnan(f) && isnan(want)), "%a became %a, not %a", d, f, want);
}

static void loses(double d, const char *word) {
    float f = 42;
    const char *why = float_narrow(d, &f);
    cr_expect(why != NULL && strstr(why, word) != NULL, "%a: %s", d, why ? why : "(kept)");
    cr_expect_eq(f, 42, "%a: the float was written though refused", d);
}

Test(float_class, nonzero_values_that_round_to_0_are_refused) {
    keeps(0x1p-149, 0x1p-149f);               /* the smallest subnormal itself */
    keeps(0x1.0000000000001p-150, 0x1p-149f); /* just above the tie: up */
    loses(0x1p-150, "rounds to 0");           /* the tie: to even, 0 */
    loses(-0x1p-150, "rounds to 0");
    loses(1e-50, "rounds to 0");
    loses(DBL_TRUE_MIN, "rounds to 0");
    keeps(0.0, 0.0f);
    keeps(-0.0, -0.0f);
}

Test(float_class, finite_values_that_overflow_are_refused) {
    keeps(0x1.fffffep127, FLT_MAX);
    keeps(0x1.fffffefffffffp127, FLT_MAX); /* just below the tie: down */
    loses(0x1.ffffffp127, "infinity");     /* the tie: to even, 2^128 */
    loses(-0x1.ffffffp127, "infinity");
    loses(1e39, "infinity");
    loses(DBL_MAX, "infinity");
    keeps(INFINITY, INFINITY); /* infinity stays what it is: the caller's to refuse */
    keeps(-INFINITY, -INFINITY);
    keeps(NAN, NAN);
}

Test(float_class, the_class_of_a_parse_against_its_text) {
    cr_expect_null(float_class_change(FLOAT_FINITE, 0x1p-149f));
    cr_expect_not_null(float_class_change(FLOAT_FINITE, 0.0f));
    cr_expect_not_null(float_class_change(FLOAT_FINITE, INFINITY));
    cr_expect_null(float_class_change(FLOAT_ZERO, -0.0f));
    cr_expect_null(float_class_change(FLOAT_INFINITE, -INFINITY));
    cr_expect_eq(float_class_of(DBL_TRUE_MIN), FLOAT_FINITE);
}

/* The command line: each float option refuses the text that changes class,
 * and takes the edge that does not. 0x1p-150 is the tie (0);
 * 7.006492321624087e-46 is just above it (2^-150 = 7.00649232162408535e-46):
 * 2^-149; 1e39 and 0x1.ffffffp127 overflow, 3.4028234e38 is below FLT_MAX's
 * tie (it reads as FLT_MAX). */
static char out[1 << 16], err[1 << 16];

static void refused(const char *args, const char *option) {
    int status = run_stepwise(args, out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d: %s", args, status, err);
    cr_expect(strstr(err, option) != NULL && strstr(err, "float32") != NULL,
              "'%s': stderr '%s' names neither %s nor the float32", args, err, option);
    const char *nl = strchr(err, '\n');
    cr_expect(nl != NULL && nl[1] == '\0', "'%s': stderr is not one line: '%s'", args, err);
}

Test(float_class, every_float_option_refuses_a_value_that_changes_class) {
    refused("inspect --bandwidth 1e-50", "--bandwidth");
    refused("inspect --bandwidth 0x1p-150", "--bandwidth");
    refused("inspect --bandwidth 1 --peak 1e-50", "--peak");
    refused("inspect --bandwidth 1e39", "--bandwidth");
    refused("serve-sim --rate 1e-50", "--rate");
    refused("generate --temperature 1e-46", "--temperature");
    refused("generate --min-p 1e-400", "--min-p");
    refused("generate --top-p 0x1.ffffffp127", "--top-p");
    refused("sample --logits 1,2,1e39", "--logits");
    refused("sample --logits 1,2 --temperature 1,1e-60", "--temperature");
    refused("make-model --arch gemma2 --attn-softcap 1e-50 --out /dev/null", "--attn-softcap");
    int status =
        run_stepwise("inspect --bandwidth 7.006492321624087e-46", out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 0, "the smallest subnormal is a bandwidth: %s", err);
    status =
        run_stepwise("inspect --bandwidth 1 --peak 3.4028234e38", out, sizeof out, err, sizeof err);
    cr_expect_eq(status, 2, "a peak of FLT_MAX is past --peak's range: %s", err);
    cr_expect(strstr(err, "must be in") != NULL, "the range, not the class: %s", err);
}
