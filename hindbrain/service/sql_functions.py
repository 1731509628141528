"""The functions tenant SQL may call: an allow-list, by ClickHouse's own names (``system.functions``).

Chosen by ClickHouse's categories (``system.functions.categories``), then reviewed by hand:
aggregates (and their combinators: ``countIf``, ``sumArray``, ``argMaxState`` ...), arithmetic,
comparison, logical, conditional, string, search and replace, dates and times, arrays, maps,
tuples, JSON extraction, type conversion, hashing, encoding, rounding, URL and IP parsing, UUIDs,
random numbers, vector distances; plus a few harmless helpers (``toTypeName``, ``transform``,
``formatReadableSize``, ``throwIf`` ...). Everything else is refused, and so is every function a
future ClickHouse adds until it is listed here. Left out on purpose: what reads files
(``file``), the network (``url``, the ``ai*`` functions), the server's settings and identity
(``getServerSetting``, ``getSetting``, ``currentDatabase``, ``version``, ``hostName``, the
time zones, ``chdb``), dictionaries (``dictGet*``, the ``region*`` functions), tables by name
(``joinGet``, ``hasColumnInTable``), introspection, ``sleep``, ``GLOBAL IN``, and the geo,
bitmap, time-series, machine-learning and encryption families (nothing here needs them).

``tests/security/test_sql_sandbox.py`` tries every name the engine lists against this list.
"""

from __future__ import annotations

import re

from hindbrain.service.sql_patterns import literal_strings

# One tuple per ClickHouse category; aliases (``substr``, ``lcase``) sit with what they alias.
_ALLOWED: dict[str, tuple[str, ...]] = {
    'aggregate': (
        'aggThrow', 'analysisOfVariance', 'anova', 'any', 'any_respect_nulls', 'any_value', 'any_value_respect_nulls',
        'anyHeavy', 'anyLast', 'anyLast_respect_nulls', 'anyLastRespectNulls', 'anyRespectNulls',
        'anyValueRespectNulls', 'approx_top_count', 'approx_top_k', 'approx_top_sum', 'argAndMax', 'argAndMin',
        'argMax', 'argMin', 'array_agg', 'avg', 'avgWeighted', 'BIT_AND', 'BIT_OR', 'BIT_XOR', 'boundingRatio',
        'categoricalInformationValue', 'contingency', 'corr', 'corrMatrix', 'corrStable', 'count', 'COVAR_POP',
        'COVAR_SAMP', 'covarPop', 'covarPopMatrix', 'covarPopStable', 'covarSamp', 'covarSampMatrix',
        'covarSampStable', 'cramersV', 'cramersVBiasCorrected', 'cume_dist', 'deltaSum', 'deltaSumTimestamp',
        'dense_rank', 'denseRank', 'distinctDynamicTypes', 'distinctJSONPaths', 'distinctJSONPathsAndTypes',
        'entropy', 'estimateCompressionRatio', 'exponentialMovingAverage', 'exponentialTimeDecayedAvg',
        'exponentialTimeDecayedCount', 'exponentialTimeDecayedMax', 'exponentialTimeDecayedSum', 'first_value',
        'first_value_respect_nulls', 'firstValueRespectNulls', 'flameGraph', 'gini', 'group_concat', 'groupArray',
        'groupArrayInsertAt', 'groupArrayIntersect', 'groupArrayLast', 'groupArrayMovingAvg', 'groupArrayMovingSum',
        'groupArraySample', 'groupArraySorted', 'groupBitAnd', 'groupBitmap', 'groupBitmapAnd', 'groupBitmapOr',
        'groupBitmapXor', 'groupBitOr', 'groupBitXor', 'groupConcat', 'groupFormat', 'groupNumericIndexedVector',
        'groupUniqArray', 'histogram', 'intervalLengthSum', 'kolmogorovSmirnovTest', 'kurtPop', 'kurtSamp', 'lag',
        'lagInFrame', 'largestTriangleThreeBuckets', 'last_value', 'last_value_respect_nulls',
        'lastValueRespectNulls', 'lead', 'leadInFrame', 'lttb', 'mannWhitneyUTest', 'max', 'max_by',
        'maxIntersections', 'maxIntersectionsPosition', 'maxMappedArrays', 'meanZTest', 'median', 'medianBFloat16',
        'medianBFloat16Weighted', 'medianDD', 'medianDeterministic', 'medianExact', 'medianExactHigh',
        'medianExactLow', 'medianExactWeighted', 'medianExactWeightedInterpolated', 'medianGK',
        'medianInterpolatedWeighted', 'medianTDigest', 'medianTDigestWeighted', 'medianTiming',
        'medianTimingWeighted', 'mergedJSONPatch', 'min', 'min_by', 'minMappedArrays', 'nonNegativeDerivative',
        'nothing', 'nothingNull', 'nothingUInt64', 'nth_value', 'ntile', 'percent_rank', 'percentRank', 'quantile',
        'quantileBFloat16', 'quantileBFloat16Weighted', 'quantileDD', 'quantileDeterministic', 'quantileExact',
        'quantileExactExclusive', 'quantileExactHigh', 'quantileExactInclusive', 'quantileExactLow',
        'quantileExactWeighted', 'quantileExactWeightedInterpolated', 'quantileGK', 'quantileInterpolatedWeighted',
        'quantilePrometheusHistogram', 'quantiles', 'quantilesBFloat16', 'quantilesBFloat16Weighted', 'quantilesDD',
        'quantilesDeterministic', 'quantilesExact', 'quantilesExactExclusive', 'quantilesExactHigh',
        'quantilesExactInclusive', 'quantilesExactLow', 'quantilesExactWeighted',
        'quantilesExactWeightedInterpolated', 'quantilesGK', 'quantilesInterpolatedWeighted',
        'quantilesPrometheusHistogram', 'quantilesTDigest', 'quantilesTDigestWeighted', 'quantilesTiming',
        'quantilesTimingWeighted', 'quantileTDigest', 'quantileTDigestWeighted', 'quantileTiming',
        'quantileTimingWeighted', 'rank', 'rankCorr', 'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept',
        'regr_r2', 'regr_slope', 'regr_sxx', 'regr_sxy', 'regr_syy', 'retention', 'row_number', 'sequenceCount',
        'sequenceMatch', 'sequenceMatchEvents', 'sequenceNextNode', 'simpleLinearRegression', 'singleValueOrNull',
        'skewPop', 'skewSamp', 'sparkBar', 'sparkbar', 'STD', 'STDDEV', 'STDDEV_POP', 'STDDEV_SAMP', 'stddevPop',
        'stddevPopStable', 'stddevSamp', 'stddevSampStable', 'string_agg', 'studentTTest', 'studentTTestOneSample',
        'sum', 'sumCount', 'sumKahan', 'sumMapFiltered', 'sumMapFilteredWithOverflow', 'sumMappedArrays',
        'sumMapWithOverflow', 'sumWithOverflow', 'theilsU', 'timeSeriesAvgToGrid', 'timeSeriesBottomKMasks',
        'timeSeriesChangesToGrid', 'timeSeriesCountToGrid', 'timeSeriesDeltaToGrid', 'timeSeriesDerivToGrid',
        'timeSeriesGroupArray', 'timeSeriesIncreaseToGrid', 'timeSeriesInstantDeltaToGrid',
        'timeSeriesInstantRateToGrid', 'timeSeriesLastToGrid', 'timeSeriesLastTwoSamples', 'timeSeriesLimitKMasks',
        'timeSeriesMaxToGrid', 'timeSeriesMinToGrid', 'timeSeriesPredictLinearToGrid', 'timeSeriesRateToGrid',
        'timeSeriesResampleToGridWithStaleness', 'timeSeriesResetsToGrid', 'timeSeriesSumToGrid',
        'timeSeriesTimestampOfMaxToGrid', 'timeSeriesTimestampOfMinToGrid', 'timeSeriesTopKMasks', 'topK',
        'topKWeighted', 'uniq', 'uniqCombined', 'uniqCombined64', 'uniqExact', 'uniqHLL12', 'uniqUpTo', 'VAR_POP',
        'VAR_SAMP', 'varPop', 'varPopStable', 'varSamp', 'varSampStable', 'welchTTest', 'windowFunnel'
    ),
    'Arithmetic': (
        'abs', 'avg2', 'byteSwap', 'divide', 'divideDecimal', 'divideOrNull', 'gcd', 'ifNotFinite', 'intDiv',
        'intDivOrNull', 'intDivOrZero', 'isFinite', 'isInfinite', 'isNaN', 'kqlBin', 'kqlBinAt', 'kqlDateTimeBinAt',
        'kqlDivide', 'kqlMultiply', 'kqlRangeCount', 'lcm', 'max2', 'midpoint', 'min2', 'minus', 'mod', 'modOrNull',
        'modulo', 'moduloLegacy', 'moduloOrNull', 'moduloOrZero', 'multiply', 'multiplyDecimal', 'negate', 'plus',
        'pmod', 'pmodOrNull', 'positive_modulo', 'positive_modulo_or_null', 'positiveModulo', 'positiveModuloOrNull',
        'sqr'
    ),
    'Arrays': (
        'array', 'array_remove', 'arrayAll', 'arrayAUC', 'arrayAUCPR', 'arrayAutocorrelation', 'arrayAvg',
        'arrayBottomK', 'arrayCompact', 'arrayConcat', 'arrayCount', 'arrayCumSum', 'arrayCumSumNonNegative',
        'arrayDifference', 'arrayDistinct', 'arrayDotProduct', 'arrayElement', 'arrayElementOrNull', 'arrayEnumerate',
        'arrayEnumerateDense', 'arrayEnumerateDenseRanked', 'arrayEnumerateUniq', 'arrayEnumerateUniqRanked',
        'arrayExcept', 'arrayExists', 'arrayFill', 'arrayFilter', 'arrayFirst', 'arrayFirstIndex', 'arrayFirstOrNull',
        'arrayFlatten', 'arrayFlattenedLength', 'arrayFold', 'arrayIntersect', 'arrayJaccardIndex', 'arrayJoin',
        'arrayLast', 'arrayLastIndex', 'arrayLastOrNull', 'arrayMap', 'arrayMax', 'arrayMin', 'arrayNormalizedGini',
        'arrayPartialReverseSort', 'arrayPartialShuffle', 'arrayPartialSort', 'arrayPopBack', 'arrayPopFront',
        'arrayPRAUC', 'arrayProduct', 'arrayPushBack', 'arrayPushFront', 'arrayRandomSample', 'arrayReduce',
        'arrayReduceInRanges', 'arrayRemove', 'arrayResize', 'arrayReverse', 'arrayReverseFill', 'arrayReverseSort',
        'arrayReverseSplit', 'arrayROCAUC', 'arrayRotateLeft', 'arrayRotateRight', 'arrayShiftLeft',
        'arrayShiftRight', 'arrayShingles', 'arrayShuffle', 'arraySlice', 'arraySort',
        'arraySplit', 'arraySum', 'arraySymmetricDifference', 'arrayTopK', 'arrayTranspose', 'arrayUnion',
        'arrayUniq', 'arrayWithConstant', 'arrayZip', 'arrayZipUnaligned', 'CARDINALITY', 'countEqual', 'empty',
        'emptyArrayDate', 'emptyArrayDateTime', 'emptyArrayFloat32', 'emptyArrayFloat64', 'emptyArrayInt16',
        'emptyArrayInt32', 'emptyArrayInt64', 'emptyArrayInt8', 'emptyArrayString', 'emptyArrayToSingle',
        'emptyArrayUInt16', 'emptyArrayUInt32', 'emptyArrayUInt64', 'emptyArrayUInt8', 'flatten', 'has',
        'hasSubstr', 'indexOf', 'indexOfAssumeSorted', 'length', 'notEmpty', 'notHas', 'OCTET_LENGTH',
        'randomHadamardTransform', 'range', 'replicate', 'reverse', 'unnest'
    ),
    'Bit': (
        'bitAnd', 'bitCount', 'bitHammingDistance', 'bitNot', 'bitOr', 'bitRotateLeft', 'bitRotateRight',
        'bitShiftLeft', 'bitShiftRight', 'bitSlice', 'bitTest', 'bitTestAll', 'bitTestAny', 'bitXor'
    ),
    'Comparison': (
        'equals', 'greater', 'greaterOrEquals', 'in', 'inIgnoreSet', 'isDistinctFrom', 'isNotDistinctFrom', 'less',
        'lessOrEquals', 'notEquals', 'notIn', 'notInIgnoreSet', 'notNullIn', 'notNullInIgnoreSet', 'nullIn',
        'nullInIgnoreSet'
    ),
    'Conditional': (
        'caseWithoutExpr', 'caseWithoutExpression', 'clamp', 'greatest', 'if', 'least', 'multiIf'
    ),
    'Dates and Times': (
        'addDate', 'addDays', 'addHours', 'addInterval', 'addMicroseconds', 'addMilliseconds', 'addMinutes',
        'addMonths', 'addNanoseconds', 'addQuarters', 'addSeconds', 'addTupleOfIntervals', 'addWeeks', 'addYears',
        'age', 'changeDay', 'changeHour', 'changeMinute', 'changeMonth', 'changeSecond', 'changeYear', 'curdate',
        'current_date', 'current_timestamp', 'date_bin', 'DATE_DIFF', 'date_diff', 'DATE_FORMAT', 'DATE_TRUNC',
        'dateDiff', 'dateName', 'dateTrunc', 'DAY', 'DAYOFMONTH', 'DAYOFWEEK', 'DAYOFYEAR', 'formatDateTime',
        'formatDateTimeInJodaSyntax', 'FROM_DAYS', 'FROM_UNIXTIME', 'from_utc_timestamp', 'fromDaysSinceYearZero',
        'fromDaysSinceYearZero32', 'fromModifiedJulianDay', 'fromModifiedJulianDayOrNull', 'fromUnixTimestamp',
        'fromUnixTimestampInJodaSyntax', 'fromUTCTimestamp', 'HOUR', 'LAST_DAY', 'localtime', 'localtimestamp',
        'makeDate', 'makeDate32', 'makeDateTime', 'makeDateTime64', 'MICROSECOND', 'MILLISECOND', 'MINUTE', 'MONTH',
        'monthName', 'NANOSECOND', 'now', 'now64', 'nowInBlock', 'nowInBlock64', 'QUARTER', 'SECOND', 'subDate',
        'subtractDays', 'subtractHours', 'subtractInterval', 'subtractMicroseconds', 'subtractMilliseconds',
        'subtractMinutes', 'subtractMonths', 'subtractNanoseconds', 'subtractQuarters', 'subtractSeconds',
        'subtractTupleOfIntervals', 'subtractWeeks', 'subtractYears', 'time_bucket', 'timeDiff', 'timeSlot',
        'timeSlots', 'timestamp', 'TIMESTAMP_DIFF', 'timestamp_diff', 'timestampDiff', 'timeZoneOf', 'timezoneOf',
        'timeZoneOffset', 'timezoneOffset', 'TO_DAYS', 'to_utc_timestamp', 'today', 'toDayOfMonth', 'toDayOfWeek',
        'toDayOfYear', 'toDaysInMonth', 'toDaysSinceYearZero', 'toHour', 'toISOWeek', 'toISOYear', 'toLastDayOfMonth',
        'toLastDayOfWeek', 'toMicrosecond', 'toMillisecond', 'toMinute', 'toModifiedJulianDay',
        'toModifiedJulianDayOrNull', 'toMonday', 'toMonth', 'toMonthNumSinceEpoch', 'toNanosecond', 'toQuarter',
        'toRelativeDayNum', 'toRelativeHourNum', 'toRelativeMinuteNum', 'toRelativeMonthNum', 'toRelativeQuarterNum',
        'toRelativeSecondNum', 'toRelativeWeekNum', 'toRelativeYearNum', 'toSecond', 'toStartOfDay',
        'toStartOfFifteenMinutes', 'toStartOfFiveMinute', 'toStartOfFiveMinutes', 'toStartOfHour',
        'toStartOfInterval', 'toStartOfISOYear', 'toStartOfMicrosecond', 'toStartOfMillisecond', 'toStartOfMinute',
        'toStartOfMonth', 'toStartOfNanosecond', 'toStartOfQuarter', 'toStartOfSecond', 'toStartOfTenMinutes',
        'toStartOfWeek', 'toStartOfYear', 'toTimeWithFixedDate', 'toTimeZone', 'toTimezone', 'toUnixTimestamp',
        'toUTCTimestamp', 'toWeek', 'toYear', 'toYearNumSinceEpoch', 'toYearWeek', 'toYYYYMM', 'toYYYYMMDD',
        'toYYYYMMDDhhmmss', 'UTC_timestamp', 'UTCTimestamp', 'week', 'YEAR', 'yearweek', 'yesterday',
        'YYYYMMDDhhmmssToDateTime', 'YYYYMMDDhhmmssToDateTime64', 'YYYYMMDDToDate', 'YYYYMMDDToDate32'
    ),
    'Distance': (
        'cosineDistance', 'cosineDistanceTransposed', 'cosineDistanceTransposedQuantized', 'distanceCosine',
        'distanceCosineTransposed', 'distanceL1', 'distanceL2', 'distanceL2Squared', 'distanceL2Transposed',
        'distanceLinf', 'distanceLp', 'dotProductTransposed', 'dotProductTransposedQuantized', 'L1Distance', 'L1Norm',
        'L1Normalize', 'L2Distance', 'L2DistanceTransposed', 'L2DistanceTransposedQuantized', 'L2Norm', 'L2Normalize',
        'L2SquaredDistance', 'L2SquaredNorm', 'LinfDistance', 'LinfNorm', 'LinfNormalize', 'LpDistance', 'LpNorm',
        'LpNormalize', 'normalizeL1', 'normalizeL2', 'normalizeLinf', 'normalizeLp', 'normL1', 'normL2',
        'normL2Squared', 'normLinf', 'normLp', 'scalarProductTransposed'
    ),
    'Encoding': (
        'bin', 'bitmaskToArray', 'bitmaskToList', 'bitPositionsToArray', 'char', 'hex', 'hilbertDecode',
        'hilbertEncode', 'mortonDecode', 'mortonEncode', 'sqid', 'sqidDecode', 'sqidEncode', 'unbin', 'unhex'
    ),
    'Hash': (
        'cityHash64', 'farmFingerprint64', 'farmHash64', 'gccMurmurHash', 'halfMD5', 'hiveHash', 'icebergHash',
        'intHash32', 'intHash64', 'javaHash', 'javaHashUTF16LE', 'jumpConsistentHash', 'kafkaMurmurHash', 'keccak256',
        'kostikConsistentHash', 'MD4', 'MD5', 'metroHash64', 'murmurHash2_32', 'murmurHash2_64', 'murmurHash3_128',
        'murmurHash3_32', 'murmurHash3_64', 'ngramMinHash', 'ngramMinHashArg', 'ngramMinHashArgCaseInsensitive',
        'ngramMinHashArgCaseInsensitiveUTF8', 'ngramMinHashArgUTF8', 'ngramMinHashCaseInsensitive',
        'ngramMinHashCaseInsensitiveUTF8', 'ngramMinHashUTF8', 'ngramSimHash', 'ngramSimHashCaseInsensitive',
        'ngramSimHashCaseInsensitiveUTF8', 'ngramSimHashUTF8', 'RIPEMD160', 'SHA1', 'SHA224', 'SHA256', 'SHA384',
        'SHA512', 'SHA512_256', 'sipHash128', 'sipHash128Keyed', 'sipHash128Reference', 'sipHash128ReferenceKeyed',
        'sipHash64', 'sipHash64Keyed', 'URLHash', 'wordShingleMinHash', 'wordShingleMinHashArg',
        'wordShingleMinHashArgCaseInsensitive', 'wordShingleMinHashArgCaseInsensitiveUTF8',
        'wordShingleMinHashArgUTF8', 'wordShingleMinHashCaseInsensitive', 'wordShingleMinHashCaseInsensitiveUTF8',
        'wordShingleMinHashUTF8', 'wordShingleSimHash', 'wordShingleSimHashCaseInsensitive',
        'wordShingleSimHashCaseInsensitiveUTF8', 'wordShingleSimHashUTF8', 'wyHash64', 'xxh3', 'xxh3_128', 'xxHash32',
        'xxHash64', 'xxHash64Spark', 'yandexConsistentHash'
    ),
    'IP Address': (
        'cutIPv6', 'INET6_ATON', 'INET6_NTOA', 'INET_ATON', 'INET_NTOA', 'IPv4CIDRToRange', 'IPv4NumToString',
        'IPv4NumToStringClassC', 'IPv4StringToNum', 'IPv4StringToNumOrDefault', 'IPv4StringToNumOrNull', 'IPv4ToIPv6',
        'IPv6CIDRToRange', 'IPv6NumToString', 'IPv6StringToNum', 'IPv6StringToNumOrDefault', 'IPv6StringToNumOrNull',
        'isIPAddressInRange', 'isIPv4String', 'isIPv6String', 'toIPv4', 'toIPv4OrDefault', 'toIPv4OrNull',
        'toIPv4OrZero', 'toIPv6', 'toIPv6OrDefault', 'toIPv6OrNull', 'toIPv6OrZero'
    ),
    'JSON': (
        'dynamicElement', 'dynamicType', 'isDynamicElementInSharedData', 'isValidJSON', 'JSON_ARRAY_LENGTH',
        'JSON_EXISTS', 'JSON_QUERY', 'JSON_VALUE', 'JSONAllPaths', 'JSONAllPathsWithTypes', 'JSONAllValues',
        'JSONArrayLength', 'JSONDynamicPaths', 'JSONDynamicPathsWithTypes', 'JSONExtract', 'JSONExtractArrayRaw',
        'JSONExtractArrayRawCaseInsensitive', 'JSONExtractBool', 'JSONExtractBoolCaseInsensitive',
        'JSONExtractCaseInsensitive', 'JSONExtractFloat', 'JSONExtractFloatCaseInsensitive', 'JSONExtractInt',
        'JSONExtractIntCaseInsensitive', 'JSONExtractKeys', 'JSONExtractKeysAndValues',
        'JSONExtractKeysAndValuesCaseInsensitive', 'JSONExtractKeysAndValuesRaw',
        'JSONExtractKeysAndValuesRawCaseInsensitive', 'JSONExtractKeysCaseInsensitive', 'JSONExtractRaw',
        'JSONExtractRawCaseInsensitive', 'JSONExtractString', 'JSONExtractStringCaseInsensitive', 'JSONExtractUInt',
        'JSONExtractUIntCaseInsensitive', 'JSONHas', 'JSONKey', 'JSONLength', 'JSONMergePatch', 'jsonMergePatch',
        'JSONSharedDataPaths', 'JSONSharedDataPathsWithTypes', 'JSONType', 'prettyPrintJSON', 'simpleJSONExtractBool',
        'simpleJSONExtractFloat', 'simpleJSONExtractInt', 'simpleJSONExtractRaw', 'simpleJSONExtractString',
        'simpleJSONExtractUInt', 'simpleJSONHas', 'toJSONString', 'visitParamExtractBool', 'visitParamExtractFloat',
        'visitParamExtractInt', 'visitParamExtractRaw', 'visitParamExtractString', 'visitParamExtractUInt',
        'visitParamHas'
    ),
    'Logical': (
        'and', 'not', 'or', 'xor'
    ),
    'Map': (
        'extractKeyValuePairs', 'extractKeyValuePairsWithEscaping', 'map', 'MAP_FROM_ARRAYS', 'mapAdd', 'mapAll',
        'mapApply', 'mapConcat', 'mapContains', 'mapContainsKey', 'mapContainsKeyLike', 'mapContainsValue',
        'mapContainsValueLike', 'mapExists', 'mapExtractKeyLike', 'mapExtractValueLike', 'mapFilter', 'mapFromArrays',
        'mapFromString', 'mapKeys', 'mapPartialReverseSort', 'mapPartialSort', 'mapPopulateSeries', 'mapReverseSort',
        'mapSort', 'mapSubtract', 'mapUpdate', 'mapValues', 'str_to_map'
    ),
    'Mathematical': (
        'acos', 'acosh', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'cbrt', 'cos', 'cosh', 'degrees', 'e', 'erf',
        'erfc', 'exp', 'exp10', 'exp2', 'factorial', 'hypot', 'intExp10', 'intExp2', 'isPrime', 'isProbablePrime',
        'lgamma', 'ln', 'log', 'log10', 'log1p', 'log2', 'pi', 'pow', 'power', 'proportionsZTest', 'radians',
        'sigmoid', 'sign', 'sin', 'sinh', 'sqrt', 'tan', 'tanh', 'tgamma', 'width_bucket', 'widthBucket'
    ),
    'Null': (
        'assumeNotNull', 'coalesce', 'firstNonDefault', 'ifNull', 'isNotNull', 'isNull', 'isNullable', 'isZeroOrNull',
        'nullIf', 'toNullable'
    ),
    'Other': (
        'bar', 'byteSize', 'caseWithExpr', 'caseWithExpression', 'countDigits', 'defaultValueOfArgumentType',
        'defaultValueOfTypeName', 'errorCodeToName', 'finalizeAggregation', 'FORMAT_BYTES',
        'formatReadableDecimalSize', 'formatReadableQuantity', 'formatReadableSize', 'formatReadableTimeDelta',
        'getSizeOfEnumType', 'getSubcolumn', 'identity', 'ignore', 'initializeAggregation', 'isConstant',
        'isDecimalOverflow', 'MACNumToString', 'MACStringToNum', 'MACStringToOUI', 'materialize', 'neighbor',
        'parseISO8601Duration', 'parseReadableSize', 'parseReadableSizeOrNull', 'parseReadableSizeOrZero',
        'parseTimeDelta', 'runningDifference', 'runningDifferenceStartingWithFirstValue', 'throwIf',
        'toColumnTypeName', 'toTypeName', 'transform', 'variantElement', 'variantType', 'visibleWidth'
    ),
    'Random Number': (
        'fuzzBits', 'rand', 'rand32', 'rand64', 'randBernoulli', 'randBinomial', 'randCanonical', 'randChiSquared',
        'randConstant', 'randExponential', 'randFisherF', 'randLogNormal', 'randNegativeBinomial', 'randNormal',
        'randomFixedString', 'randomPrintableASCII', 'randomString', 'randomStringUTF8', 'randPoisson',
        'randStudentT', 'randUniform'
    ),
    'Rounding': (
        'ceil', 'ceiling', 'floor', 'round', 'roundAge', 'roundBankers', 'roundDown', 'roundDuration', 'roundToExp2',
        'trunc', 'truncate'
    ),
    'String': (
        'appendTrailingCharIfAbsent', 'ascii', 'base32Decode', 'base32Encode', 'base58Decode', 'base58Encode',
        'base64Decode', 'base64Encode', 'base64URLDecode', 'base64URLEncode', 'basename', 'byteHammingDistance',
        'byteSlice', 'caseFoldUTF8', 'CHAR_LENGTH', 'CHARACTER_LENGTH', 'compareSubstrings', 'concat', 'concat_ws',
        'concatAssumeInjective', 'concatWithSeparator', 'concatWithSeparatorAssumeInjective', 'conv',
        'convertCharset', 'CRC32', 'CRC32IEEE', 'CRC64', 'decodeHTMLComponent',
        'decodeXMLComponent', 'encodeXMLComponent', 'endsWith',
        'endsWithCaseInsensitive', 'endsWithCaseInsensitiveUTF8', 'endsWithUTF8', 'extractTextFromHTML', 'firstLine',
        'FROM_BASE64', 'initcap', 'initcapUTF8', 'isASCII', 'isValidASCII', 'isValidUTF8', 'jaroSimilarity',
        'jaroWinklerSimilarity', 'lcase', 'left', 'leftPad', 'leftPadUTF8', 'leftUTF8', 'lengthUTF8',
        'lower', 'lowerUTF8', 'lpad', 'ltrim', 'mid', 'mismatches',
        'NATURAL_SORT_KEY', 'naturalSortKey', 'REGEXP_EXTRACT', 'regexp_instr', 'REGEXP_SUBSTR',
        'regexpExtract', 'regexpInstr', 'regexpPosition', 'repeat',
        'reverseUTF8', 'right', 'rightPad', 'rightPadUTF8', 'rightUTF8', 'rpad', 'rtrim', 'soundex', 'space',
        'sparseGrams', 'sparseGramsHashes', 'sparseGramsHashesUTF8', 'sparseGramsUTF8', 'startsWith',
        'startsWithCaseInsensitive', 'startsWithCaseInsensitiveUTF8', 'startsWithUTF8', 'stringBytesEntropy',
        'stringBytesUniq', 'stringJaccardIndex', 'stringJaccardIndexUTF8', 'substr', 'substring', 'SUBSTRING_INDEX',
        'substringIndex', 'substringIndexUTF8', 'substringUTF8', 'TO_BASE64', 'toValidUTF8', 'trim', 'trimBoth',
        'trimLeft', 'trimRight', 'tryBase32Decode', 'tryBase58Decode', 'tryBase64Decode', 'tryBase64URLDecode',
        'ucase', 'upper', 'upperUTF8'
    ),
    'String Replacement': (
        'format', 'overlay', 'overlayUTF8', 'printf', 'REGEXP_REPLACE', 'regexpQuoteMeta', 'replace', 'replaceAll',
        'replaceOne', 'replaceRegexpAll', 'replaceRegexpOne', 'translate', 'translateUTF8'
    ),
    'String Search': (
        'countMatches', 'countSubstrings', 'extract', 'extractAll', 'extractAllGroupsHorizontal', 'extractGroups',
        'hasAllToken', 'hasAllTokens', 'hasAnyToken', 'hasAnyTokens', 'hasPhrase', 'hasSubsequence',
        'hasSubsequenceCaseInsensitive', 'hasSubsequenceCaseInsensitiveUTF8', 'hasSubsequenceUTF8', 'hasToken',
        'hasTokenOrNull', 'like', 'match', 'matchCaseInsensitive', 'matchPhrase',
        'multiFuzzyMatchAllIndices',
        'multiFuzzyMatchAny', 'multiFuzzyMatchAnyIndex', 'multiMatchAllIndices', 'multiMatchAny',
        'multiMatchAnyIndex', 'multiSearchAllPositions', 'multiSearchAllPositionsUTF8', 'multiSearchAny',
        'multiSearchAnyUTF8', 'multiSearchFirstIndex', 'multiSearchFirstIndexUTF8', 'multiSearchFirstPosition',
        'multiSearchFirstPositionUTF8', 'ngramDistance',
        'ngramDistanceCaseInsensitive', 'ngramDistanceCaseInsensitiveUTF8', 'ngramDistanceUTF8', 'ngramSearch',
        'ngramSearchCaseInsensitive', 'ngramSearchCaseInsensitiveUTF8', 'ngramSearchUTF8', 'notLike',
        'notMatch', 'notMatchCaseInsensitive', 'REGEXP_MATCHES'
    ),
    'String Splitting': (
        'alphaTokens', 'array_to_string', 'arrayStringConcat', 'extractAllGroups', 'extractAllGroupsVertical',
        'naiveBayesNgrams', 'ngrams', 'reverseBySeparator', 'splitByAlpha', 'splitByChar', 'splitByNonAlpha',
        'splitByRegexp', 'splitByString', 'splitByWhitespace', 'tokens', 'tokensForLikePattern'
    ),
    'Tuple': (
        'dotProduct', 'flattenTuple', 'scalarProduct', 'tuple', 'tupleConcat', 'tupleDivide', 'tupleDivideByNumber',
        'tupleElement', 'tupleHammingDistance', 'tupleIntDiv', 'tupleIntDivByNumber', 'tupleIntDivOrZero',
        'tupleIntDivOrZeroByNumber', 'tupleMinus', 'tupleModulo', 'tupleModuloByNumber', 'tupleMultiply',
        'tupleMultiplyByNumber', 'tupleNames', 'tupleNegate', 'tuplePlus', 'tuplePositiveModuloByNumber',
        'tupleToNameValuePairs', 'vectorDifference', 'vectorSum'
    ),
    'Type Conversion': (
        'accurateCast', 'accurateCastOrDefault', 'accurateCastOrNull', 'CAST', 'DATE', 'formatRow',
        'formatRowNoNewline', 'fromUnixTimestamp64Micro', 'fromUnixTimestamp64Milli', 'fromUnixTimestamp64Nano',
        'fromUnixTimestamp64Second', 'kqlParameterCast', 'kqlToTimespan', 'parseDateTime',
        'parseDateTime32BestEffort', 'parseDateTime32BestEffortOrNull', 'parseDateTime32BestEffortOrZero',
        'parseDateTime64', 'parseDateTime64BestEffort', 'parseDateTime64BestEffortOrNull',
        'parseDateTime64BestEffortOrZero', 'parseDateTime64BestEffortUS', 'parseDateTime64BestEffortUSOrNull',
        'parseDateTime64BestEffortUSOrZero', 'parseDateTime64InJodaSyntax', 'parseDateTime64InJodaSyntaxOrNull',
        'parseDateTime64InJodaSyntaxOrZero', 'parseDateTime64OrNull', 'parseDateTime64OrZero',
        'parseDateTimeBestEffort', 'parseDateTimeBestEffortOrNull', 'parseDateTimeBestEffortOrZero',
        'parseDateTimeBestEffortUS', 'parseDateTimeBestEffortUSOrNull', 'parseDateTimeBestEffortUSOrZero',
        'parseDateTimeInJodaSyntax', 'parseDateTimeInJodaSyntaxOrNull', 'parseDateTimeInJodaSyntaxOrZero',
        'parseDateTimeOrNull', 'parseDateTimeOrZero', 'reinterpret', 'reinterpretAsDate', 'reinterpretAsDateTime',
        'reinterpretAsFixedString', 'reinterpretAsFloat32', 'reinterpretAsFloat64', 'reinterpretAsInt128',
        'reinterpretAsInt16', 'reinterpretAsInt256', 'reinterpretAsInt32', 'reinterpretAsInt64', 'reinterpretAsInt8',
        'reinterpretAsString', 'reinterpretAsUInt128', 'reinterpretAsUInt16', 'reinterpretAsUInt256',
        'reinterpretAsUInt32', 'reinterpretAsUInt64', 'reinterpretAsUInt8', 'reinterpretAsUUID', 'str_to_date',
        'TO_UNIXTIME', 'toBFloat16', 'toBFloat16OrNull', 'toBFloat16OrZero', 'toBool', 'toDate', 'toDate32',
        'toDate32OrDefault', 'toDate32OrNull', 'toDate32OrZero', 'toDateOrDefault', 'toDateOrNull', 'toDateOrZero',
        'toDateTime', 'toDateTime32', 'toDateTime64', 'toDateTime64OrDefault', 'toDateTime64OrNull',
        'toDateTime64OrZero', 'toDateTimeOrDefault', 'toDateTimeOrNull', 'toDateTimeOrZero', 'toDecimal128',
        'toDecimal128OrDefault', 'toDecimal128OrNull', 'toDecimal128OrZero', 'toDecimal256', 'toDecimal256OrDefault',
        'toDecimal256OrNull', 'toDecimal256OrZero', 'toDecimal32', 'toDecimal32OrDefault', 'toDecimal32OrNull',
        'toDecimal32OrZero', 'toDecimal64', 'toDecimal64OrDefault', 'toDecimal64OrNull', 'toDecimal64OrZero',
        'toDecimalString', 'toFixedString', 'toFloat32', 'toFloat32OrDefault', 'toFloat32OrNull', 'toFloat32OrZero',
        'toFloat64', 'toFloat64OrDefault', 'toFloat64OrNull', 'toFloat64OrZero', 'toInt128', 'toInt128OrDefault',
        'toInt128OrNull', 'toInt128OrZero', 'toInt16', 'toInt16OrDefault', 'toInt16OrNull', 'toInt16OrZero',
        'toInt256', 'toInt256OrDefault', 'toInt256OrNull', 'toInt256OrZero', 'toInt32', 'toInt32OrDefault',
        'toInt32OrNull', 'toInt32OrZero', 'toInt64', 'toInt64OrDefault', 'toInt64OrNull', 'toInt64OrZero', 'toInt8',
        'toInt8OrDefault', 'toInt8OrNull', 'toInt8OrZero', 'toInterval', 'toIntervalDay', 'toIntervalHour',
        'toIntervalMicrosecond', 'toIntervalMillisecond', 'toIntervalMinute', 'toIntervalMonth',
        'toIntervalNanosecond', 'toIntervalQuarter', 'toIntervalSecond', 'toIntervalWeek', 'toIntervalYear',
        'toLowCardinality', 'toString', 'toStringCutToZero', 'toTime', 'toTime64', 'toTime64OrNull', 'toTime64OrZero',
        'toTimeOrNull', 'toTimeOrZero', 'toUInt128', 'toUInt128OrDefault', 'toUInt128OrNull', 'toUInt128OrZero',
        'toUInt16', 'toUInt16OrDefault', 'toUInt16OrNull', 'toUInt16OrZero', 'toUInt256', 'toUInt256OrDefault',
        'toUInt256OrNull', 'toUInt256OrZero', 'toUInt32', 'toUInt32OrDefault', 'toUInt32OrNull', 'toUInt32OrZero',
        'toUInt64', 'toUInt64OrDefault', 'toUInt64OrNull', 'toUInt64OrZero', 'toUInt8', 'toUInt8OrDefault',
        'toUInt8OrNull', 'toUInt8OrZero', 'toUnixTimestamp64Micro', 'toUnixTimestamp64Milli', 'toUnixTimestamp64Nano',
        'toUnixTimestamp64Second', 'toUUID', 'toUUIDOrZero'
    ),
    'URL': (
        'cutFragment', 'cutQueryString', 'cutQueryStringAndFragment', 'cutToFirstSignificantSubdomain',
        'cutToFirstSignificantSubdomainCustom', 'cutToFirstSignificantSubdomainCustomRFC',
        'cutToFirstSignificantSubdomainCustomWithWWW', 'cutToFirstSignificantSubdomainCustomWithWWWRFC',
        'cutToFirstSignificantSubdomainRFC', 'cutToFirstSignificantSubdomainWithWWW',
        'cutToFirstSignificantSubdomainWithWWWRFC', 'cutURLParameter', 'cutWWW', 'decodeURLComponent',
        'decodeURLFormComponent', 'domain', 'domainRFC', 'domainWithoutWWW', 'domainWithoutWWWRFC',
        'encodeURLComponent', 'encodeURLFormComponent', 'extractURLParameter', 'extractURLParameterNames',
        'extractURLParameters', 'firstSignificantSubdomain', 'firstSignificantSubdomainCustom',
        'firstSignificantSubdomainCustomRFC', 'firstSignificantSubdomainRFC', 'fragment', 'netloc', 'path',
        'pathFull', 'port', 'portRFC', 'protocol', 'queryString', 'queryStringAndFragment', 'topLevelDomain',
        'topLevelDomainRFC', 'URLHierarchy', 'URLPathHierarchy'
    ),
    'UUID': (
        'dateTime64ToSnowflakeID', 'dateTimeToSnowflakeID', 'dateTimeToUUIDv7', 'generateSnowflakeID',
        'generateUUIDv4', 'generateUUIDv7', 'snowflakeIDToDateTime', 'snowflakeIDToDateTime64', 'toUUIDOrDefault',
        'toUUIDOrNull', 'UUIDNumToString', 'UUIDStringToNum', 'UUIDToNum', 'UUIDv7ToDateTime'
    ),
}
# Left out because one call on one row can outlast every limit (design.md §issue-27's limits are checked
# between blocks, never inside a function): their cost grows with the *product* of their arguments'
# lengths, and a row's strings and arrays reach millions of elements (``repeat``, ``range``, a long
# event). Measured on chDB (docs/security.md, round twenty-four): ``countSubstringsCaseInsensitive``
# of a 500 k haystack and a 250 k needle ran 146 s against a 10 s ``max_execution_time``,
# ``arrayLevenshteinDistance`` of two 120 k arrays 16 s, ``position`` of 1 M and 500 k characters 7-8.5 s
# (quadratic: twice the length, ~5x the time), ``ilike`` of 60 k and 30 k over 12 s. Each maps to what
# to write instead: a linear function that answers the same question.
ROW_QUADRATIC: dict[str, str] = {
    **dict.fromkeys(("editDistance", "editDistanceUTF8", "levenshteinDistance", "levenshteinDistanceUTF8",
                     "damerauLevenshteinDistance"), "ngramDistance(a, b) or stringJaccardIndex(a, b)"),
    **dict.fromkeys(("arrayLevenshteinDistance", "arrayLevenshteinDistanceWeighted", "arraySimilarity"),
                    "length(arraySymmetricDifference(a, b))"),
    **dict.fromkeys(("hasAll", "hasAny"), "length(arrayIntersect(a, b)) (hash-based)"),
    **dict.fromkeys(("position", "positionUTF8", "locate", "instr"), "multiSearchFirstPosition(haystack, [needle])"),
    **dict.fromkeys(("positionCaseInsensitive", "positionCaseInsensitiveUTF8"),
                    "multiSearchFirstPosition(lower(haystack), [lower(needle)])"),
    **dict.fromkeys(("ilike", "notILike"), "lower(x) LIKE 'the pattern in lower case', or match(x, '(?i)...')"),
    **dict.fromkeys(("countSubstringsCaseInsensitive", "countSubstringsCaseInsensitiveUTF8"),
                    "countSubstrings(lower(haystack), lower(needle))"),
    **dict.fromkeys(("hasTokenCaseInsensitive", "hasTokenCaseInsensitiveOrNull"),
                    "hasToken(lower(text), lower(token))"),
    "countMatchesCaseInsensitive": "countMatches(haystack, '(?i)pattern')",
    # Round twenty-five (docs/security.md): highlight of 40 k / 20 k characters 0.97 s, of 20 k / 10 k 0.31 s
    # (quadratic), one row of 10^6 characters and 255 needles of 101 18.7 s. ICU's normalizers reorder a
    # run of combining marks by insertion: 'a' and 200 k alternating marks ran 19-32 s against a 5 s limit.
    "highlight": "replaceRegexpAll(haystack, '(needle|other)', '<em>\\\\1</em>')",
    **dict.fromkeys(("normalizeUTF8NFC", "normalizeUTF8NFD", "normalizeUTF8NFKC", "normalizeUTF8NFKD",
                     "normalizeUTF8NFKCCasefold", "removeAccentsUTF8", "removeDiacriticsUTF8"),
                    "caseFoldUTF8(x) or lowerUTF8(x) to compare texts (normalize a text before perceiving it)"),
    **dict.fromkeys(("multiSearchAllPositionsCaseInsensitive", "multiSearchAllPositionsCaseInsensitiveUTF8",
                     "multiSearchAnyCaseInsensitive", "multiSearchAnyCaseInsensitiveUTF8",
                     "multiSearchFirstIndexCaseInsensitive", "multiSearchFirstIndexCaseInsensitiveUTF8",
                     "multiSearchFirstPositionCaseInsensitive", "multiSearchFirstPositionCaseInsensitiveUTF8"),
                    "the same function without CaseInsensitive, over lower(haystack) and lowered needles"),
}
_QUADRATIC_BY_LOWER = {name.lower(): alternative for name, alternative in ROW_QUADRATIC.items()}
# Syntax that ClickHouse writes as a function in its AST: ``x -> f(x)``, ``EXISTS (subquery)``, and
# a query parameter of a composite type (``{ids:Array(String)}`` is ``_CAST``, CAST's internal twin).
_SYNTAX = ("lambda", "exists", "_CAST")
AGGREGATES = frozenset(n.lower() for n in _ALLOWED["aggregate"])
FUNCTIONS = frozenset(n.lower() for names in (*_ALLOWED.values(), _SYNTAX) for n in names)
# Aggregate combinators (``system.aggregate_function_combinators``), longest first so ``MergeState``
# is not read as ``State``: ``sumIf``, ``uniqMerge``, ``countDistinct`` are aggregates with suffixes.
_COMBINATOR = re.compile(r"(If|Array|ArrayIf|Map|MergeState|State|SimpleState|Merge|ForEach|Distinct|OrDefault|OrNull|"
                         r"Resample|ArgMin|ArgMax)$")


def quadratic_alternative(name: str) -> str | None:
    """What to write instead of ``name`` if it is one of ``ROW_QUADRATIC`` (in any case), else None."""
    return _QUADRATIC_BY_LOWER.get(name.lower())


def allowed_function(name: str) -> bool:
    """Whether tenant SQL may call ``name``: listed (ClickHouse resolves a listed name in any case
    only if it is case-insensitive; a wrong case of a case-sensitive name fails as unknown), or an
    allowed aggregate with combinator suffixes."""
    return name.lower() in FUNCTIONS or allowed_aggregate(name)


def allowed_aggregate(name: str) -> bool:
    """Whether ``name`` is an allowed aggregate, with or without combinator suffixes (``sumIf``, ``uniqState``)."""
    base = name
    if base.lower() in AGGREGATES:
        return True
    while (match := _COMBINATOR.search(base)) and match.start() > 0:
        base = base[: match.start()]
        if base.lower() in AGGREGATES:
            return True
    return False


# Functions that take an aggregate's name as a string (``arrayReduce('sum', xs)``): the engine builds the
# aggregate by that name, which the function check never saw (round twenty-seven: the refused
# ``stochasticLinearRegression`` ran as ``arrayReduce('stochasticLinearRegression', …)``, and so would any
# aggregate a future engine adds). The name must be a literal (a computed one is folded by the engine
# after the checks: ``arrayReduce(concat('stochasticLinear', 'Regression'), …)`` ran too) and allowed.
AGGREGATE_NAME_ARGUMENT = {"arrayreduce": 0, "arrayreduceinranges": 0, "initializeaggregation": 0}
# Functions that take a type's name as a string: a type ``AggregateFunction(name, …)`` builds that aggregate
# too (``finalizeAggregation(defaultValueOfTypeName('AggregateFunction(stochasticLinearRegression, …)'))`` ran
# it). Argument index of the type, -1 for the last; a literal type is read by ``state_type_refusal``.
TYPE_NAME_ARGUMENT = {
    **dict.fromkeys(("cast", "_cast", "accuratecast", "accuratecastornull", "accuratecastordefault", "reinterpret",
                     "dynamicelement", "variantelement", "isdynamicelementinshareddata"), 1),
    "defaultvalueoftypename": 0,
    **dict.fromkeys(("jsonextract", "jsonextractcaseinsensitive", "jsonextractkeysandvalues",
                     "jsonextractkeysandvaluescaseinsensitive"), -1),
}
_STATE_TYPE = re.compile(r"(?:Simple)?AggregateFunction\s*\(\s*(?:\d+\s*,\s*)?[`\"]?([A-Za-z_][A-Za-z0-9_]*)",
                         re.IGNORECASE)


def named_argument_refusal(function: str, arguments: list[str]) -> str | None:
    """Why ``function``, given these ``arguments`` (their ``EXPLAIN AST`` lines), names an aggregate or a type
    tenant SQL may not use (see ``AGGREGATE_NAME_ARGUMENT``, ``TYPE_NAME_ARGUMENT``), or None."""
    lowered = function.lower()
    index, what = ((AGGREGATE_NAME_ARGUMENT[lowered], "aggregate") if lowered in AGGREGATE_NAME_ARGUMENT else
                   (TYPE_NAME_ARGUMENT[lowered], "type") if lowered in TYPE_NAME_ARGUMENT else (None, None))
    if index is None or not arguments or index >= len(arguments):
        return None  # not such a function, or a wrong arity the engine refuses itself
    argument = arguments[index]
    names = literal_strings(argument) if argument.startswith("Literal '") else None
    if names is None:
        if what == "type" and not argument.startswith(("Function", "Identifier", "QueryParameter")):
            return None  # a literal of another kind (a number): not a type's name, the engine says what it needs
        return (f"{function}(): the {what} it names (argument {index + 1 if index >= 0 else len(arguments)}) "
                f"must be a string literal: a computed name is resolved after the checks")
    (name,) = names
    if what == "aggregate":
        base = name.split("(", 1)[0].strip().strip("`\"")
        return None if allowed_aggregate(base) else f"{function}('{base}'): {base} is not an allowed aggregate"
    return state_type_refusal(name)


def state_type_refusal(text: str) -> str | None:
    """Why a type named in ``text`` (a string literal of the query) holds the state of an aggregate that tenant
    SQL may not use (``AggregateFunction(stochasticLinearRegression, Float64)``), or None."""
    refused = [name for name in _STATE_TYPE.findall(text) if not allowed_aggregate(name)]
    return f"{refused[0]}: not an allowed aggregate, in the type {text[:120]!r}" if refused else None
