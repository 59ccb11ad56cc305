"""What ``from M import *`` binds, for the torch modules whose star import porter resolves.

A star import binds the names in the module's ``__all__`` (Python language reference, "The import
statement"). These are torch 2.13.0's ``__all__`` lists, read from the installed torch by
``tests/test_walk.py::test_star_exports_are_torchs_all`` (it fails when they drift, and rewrites
this file under ``PORTER_UPDATE_FIXTURES=1``). A table, not an import at run time: ``porter
migrate`` does not need torch (it is the ``check`` extra), importing it takes seconds, and the port
must not depend on the porting machine's torch. Modules without ``__all__`` (``torch.nn``,
``torch.distributed``) bind whatever public globals they hold at import time, and other packages'
star imports (``from utils import *``) bind what is not in view: names from those stay unresolved.
"""

from __future__ import annotations

STAR_EXPORTS: dict[str, frozenset[str]] = {
    "torch": frozenset(
        (
            "AVG AcceleratorError AggregationType AliasDb AnyType Argument ArgumentSpec AwaitType "
            "BenchmarkConfig BenchmarkExecutionStats Block BoolStorage BoolTensor BoolType BufferDict "
            "ByteStorage ByteTensor CallStack Capsule CharStorage CharTensor ClassType Code CompilationUnit "
            "CompleteArgumentSpec ComplexType ConcreteModuleType ConcreteModuleTypeBuilder DeepCopyMemoTable "
            "DeserializationStorageContext DeviceObjType DictType DisableTorchFunction "
            "DisableTorchFunctionSubclass DispatchKey DispatchKeySet DoubleStorage DoubleTensor EnumType "
            "ErrorReport Event ExcludeDispatchKeyGuard ExecutionPlan FatalError FileCheck FloatStorage "
            "FloatTensor FloatType FunctionSchema Future FutureType Generator GradScaler Gradient Graph "
            "GraphExecutorState IODescriptor InferredType IntStorage IntTensor IntType InterfaceType "
            "JITException ListType LiteScriptModule LockingLogger LongStorage LongTensor ModuleDict Node "
            "NoneType NoopLogger NumberType OperatorInfo OptionalType OutOfMemoryError ParameterDict "
            "PyObjectType PyTorchFileReader PyTorchFileWriter RRefType SUM ScriptClass ScriptClassFunction "
            "ScriptDict ScriptDictIterator ScriptDictKeyIterator ScriptFunction ScriptList ScriptListIterator "
            "ScriptMethod ScriptModule ScriptModuleSerializer ScriptObject ScriptObjectProperty "
            "SerializationStorageContext ShortStorage ShortTensor Size StaticModule Stream StreamObjType "
            "StringType SymBool SymBoolType SymFloat SymInt SymIntType Tag Tensor TensorType "
            "ThroughputBenchmark TracingState TupleType Type TypedStorage UnionType UntypedStorage Use Value "
            "abs abs_ absolute acos acos_ acosh acosh_ adaptive_avg_pool1d adaptive_max_pool1d add addbmm "
            "addcdiv addcmul addmm addmv addmv_ addr adjoint affine_grid_generator alias_copy all allclose "
            "alpha_dropout alpha_dropout_ amax amin aminmax angle any arange arccos arccos_ arccosh arccosh_ "
            "arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan_ arctanh arctanh_ "
            "are_deterministic_algorithms_enabled argmax argmin argsort argwhere as_strided as_strided_ "
            "as_strided_copy as_strided_scatter as_tensor asarray asin asin_ asinh asinh_ atan atan2 atan_ "
            "atanh atanh_ atleast_1d atleast_2d atleast_3d autocast autocast_decrement_nesting "
            "autocast_increment_nesting avg_pool1d baddbmm bartlett_window batch_norm "
            "batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats "
            "batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats bernoulli bfloat16 "
            "bilinear binary_cross_entropy_with_logits bincount binomial bit bits16 bits1x8 bits2x4 bits4x2 "
            "bits8 bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor "
            "blackman_window block_diag bmm bool broadcast_tensors broadcast_to bucketize can_cast "
            "cartesian_prod cat ccol_indices_copy cdist cdouble ceil ceil_ celu celu_ cfloat chain_matmul "
            "chalf channel_shuffle cholesky cholesky_inverse cholesky_solve choose_qparams_optimized chunk "
            "clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clear_autocast_cache clip clip_ clone "
            "col_indices_copy column_stack combinations compile complex complex128 complex32 complex64 concat "
            "concatenate cond conj conj_physical conj_physical_ constant_pad_nd conv1d conv2d conv3d conv_tbc "
            "conv_transpose1d conv_transpose2d conv_transpose3d convolution copysign corrcoef cos cos_ cosh "
            "cosh_ cosine_embedding_loss cosine_similarity count_nonzero cov cpp cross crow_indices_copy "
            "ctc_loss cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution "
            "cudnn_convolution_add_relu cudnn_convolution_relu cudnn_convolution_transpose cudnn_grid_sampler "
            "cudnn_is_acceptable cummax cummin cumprod cumsum cumulative_trapezoid default_generator deg2rad "
            "deg2rad_ dequantize det detach detach_ detach_copy device diag diag_embed diagflat diagonal "
            "diagonal_copy diagonal_scatter diff digamma dist div divide dot double dropout dropout_ dsmm "
            "dsplit dstack dtype e einsum embedding embedding_bag embedding_renorm_ empty empty_like "
            "empty_permuted empty_quantized empty_strided enable_grad eq equal erf erf_ erfc erfc_ erfinv exp "
            "exp2 exp2_ exp_ expand_copy expm1 expm1_ export eye fake_quantize_per_channel_affine "
            "fake_quantize_per_tensor_affine fbgemm_linear_fp16_weight "
            "fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight "
            "fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight "
            "fbgemm_pack_gemm_matrix_fp16 fbgemm_pack_quantized_matrix feature_alpha_dropout "
            "feature_alpha_dropout_ feature_dropout feature_dropout_ fill fill_ finfo fix fix_ flatten flip "
            "fliplr flipud float float16 float32 float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz "
            "float8_e5m2 float8_e5m2fnuz float8_e8m0fnu float_power floor floor_ floor_divide fmax fmin fmod "
            "fork frac frac_ frexp frobenius_norm from_file from_numpy frombuffer full full_like "
            "fused_moving_avg_obs_fake_quant gather gcd gcd_ ge geqrf ger get_autocast_cpu_dtype "
            "get_autocast_dtype get_autocast_gpu_dtype get_autocast_ipu_dtype get_autocast_xla_dtype "
            "get_default_device get_default_dtype get_deterministic_debug_mode get_device get_device_module "
            "get_float32_matmul_precision get_num_interop_threads get_num_threads get_rng_state gradient "
            "greater greater_equal grid_sampler grid_sampler_2d grid_sampler_3d group_norm gru gru_cell gt "
            "half hamming_window hann_window hardshrink has_lapack has_mkl has_openmp has_spectral "
            "hash_tensor heaviside hinge_embedding_loss histc histogram histogramdd hsmm hsplit hspmm hstack "
            "hypot i0 i0_ igamma igammac iinfo imag import_ir_module import_ir_module_from_buffer index_add "
            "index_copy index_fill index_put index_put_ index_reduce index_select indices_copy inf "
            "inference_mode init_num_threads initial_seed inner instance_norm int int1 int16 int2 int3 int32 "
            "int4 int5 int6 int64 int7 int8 int_repr inverse is_anomaly_check_nan_enabled is_anomaly_enabled "
            "is_autocast_cache_enabled is_autocast_cpu_enabled is_autocast_enabled is_autocast_ipu_enabled "
            "is_autocast_xla_enabled is_complex is_conj is_deterministic_algorithms_warn_only_enabled "
            "is_distributed is_floating_point is_grad_enabled is_inference is_inference_mode_enabled is_neg "
            "is_nonzero is_same_size is_signed is_storage is_tensor is_vulkan_available "
            "is_warn_always_enabled isclose isfinite isin isinf isnan isneginf isposinf isreal istft "
            "kaiser_window kl_div kron kthvalue layer_norm layout lcm lcm_ ldexp ldexp_ le lerp less "
            "less_equal lgamma linspace load lobpcg log log10 log10_ log1p log1p_ log2 log2_ log_ log_softmax "
            "logaddexp logaddexp2 logcumsumexp logdet logical_and logical_not logical_or logical_xor logit "
            "logit_ logspace logsumexp long lstm lstm_cell lt lu_solve lu_unpack manual_seed "
            "margin_ranking_loss masked_fill masked_scatter masked_select matmul matrix_exp matrix_power max "
            "max_pool1d max_pool1d_with_indices max_pool2d max_pool3d maximum mean median memory_format "
            "merge_type_from_type_comment meshgrid min minimum miopen_batch_norm miopen_convolution "
            "miopen_convolution_add_relu miopen_convolution_relu miopen_convolution_transpose miopen_ctc_loss "
            "miopen_depthwise_convolution miopen_rnn mkldnn_adaptive_avg_pool2d mkldnn_convolution "
            "mkldnn_linear_backward_weights mkldnn_max_pool2d mkldnn_max_pool3d mkldnn_rnn_layer mm mode "
            "moveaxis movedim msort mul multinomial multiply mv mvlgamma nan nan_to_num nan_to_num_ nanmean "
            "nanmedian nanquantile nansum narrow narrow_copy native_batch_norm native_channel_shuffle "
            "native_dropout native_group_norm native_layer_norm native_norm ne neg neg_ negative negative_ "
            "newaxis nextafter no_grad nonzero nonzero_static norm norm_except_dim normal not_equal "
            "nuclear_norm numel ones ones_like orgqr ormqr outer pairwise_distance parse_ir parse_schema "
            "parse_type_comment pdist permute permute_copy pi pinverse pixel_shuffle pixel_unshuffle poisson "
            "poisson_nll_loss polar polygamma positive pow prelu prod promote_types put q_per_channel_axis "
            "q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qint32 qint8 qr qscheme "
            "quantile quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic "
            "quantized_batch_norm quantized_gru_cell quantized_lstm_cell quantized_max_pool1d "
            "quantized_max_pool2d quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell "
            "quint2x4 quint4x2 quint8 rad2deg rad2deg_ rand rand_like randint randint_like randn randn_like "
            "randperm range ravel real reciprocal reciprocal_ relu relu_ remainder renorm repeat_interleave "
            "reshape resize_as_ resize_as_sparse_ resolve_conj resolve_neg result_type rms_norm rnn_relu "
            "rnn_relu_cell rnn_tanh rnn_tanh_cell roll rot90 round round_ row_indices_copy row_stack rrelu "
            "rrelu_ rsqrt rsqrt_ rsub saddmm save scalar_tensor scatter scatter_add scatter_reduce "
            "searchsorted seed select select_copy select_scatter selu selu_ set_anomaly_enabled "
            "set_autocast_cache_enabled set_autocast_cpu_dtype set_autocast_cpu_enabled set_autocast_dtype "
            "set_autocast_enabled set_autocast_gpu_dtype set_autocast_ipu_dtype set_autocast_ipu_enabled "
            "set_autocast_xla_dtype set_autocast_xla_enabled set_default_device set_default_tensor_type "
            "set_deterministic_debug_mode set_float32_matmul_precision set_flush_denormal "
            "set_num_interop_threads set_num_threads set_printoptions set_rng_state set_warn_always sgn short "
            "sigmoid sigmoid_ sign signbit sin sin_ sinc sinc_ sinh sinh_ slice_copy slice_inverse "
            "slice_scatter slogdet smm softmax sort sparse_bsc_tensor sparse_bsr_tensor "
            "sparse_compressed_tensor sparse_coo_tensor sparse_csc_tensor sparse_csr_tensor split split_copy "
            "split_with_sizes split_with_sizes_copy spmm sqrt sqrt_ square square_ squeeze squeeze_copy "
            "sspaddmm stack std std_mean stft sub subtract sum svd swapaxes swapdims sym_constrain_range "
            "sym_constrain_range_for_size sym_float sym_fresh_size sym_int sym_ite sym_max sym_min sym_not "
            "sym_sqrt sym_sum t t_copy take take_along_dim tan tan_ tanh tanh_ tensor tensor_split tensordot "
            "thread_safe_generator threshold threshold_ tile topk trace transpose transpose_copy trapezoid "
            "trapz triangular_solve tril tril_indices triplet_margin_loss triu triu_indices true_divide trunc "
            "trunc_ typename uint1 uint16 uint2 uint3 uint32 uint4 uint5 uint6 uint64 uint7 uint8 unbind "
            "unbind_copy unflatten unfold_copy unify_type_list unique_consecutive unravel_index unsafe_chunk "
            "unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_copy use_deterministic_algorithms "
            "values_copy vander var var_mean vdot view_as_complex view_as_complex_copy view_as_real "
            "view_as_real_copy view_copy vmap vsplit vstack wait where xlogy xlogy_ zero_ zeros zeros_like "
        ).split()
    ),
    "torch.amp": frozenset(
        (
            "GradScaler autocast custom_bwd custom_fwd is_autocast_available "
        ).split()
    ),
    "torch.backends.cuda": frozenset(
        (
            "SDPAParams allow_fp16_bf16_reduction_math_sdp blas_workspace_size can_use_cudnn_attention "
            "can_use_efficient_attention can_use_flash_attention cuBLASModule cuFFTPlanCache "
            "cuFFTPlanCacheAttrContextProp cuFFTPlanCacheManager cublas_workspace_size "
            "cublaslt_workspace_size cudnn_sdp_enabled cufft_plan_cache enable_cudnn_sdp enable_flash_sdp "
            "enable_math_sdp enable_mem_efficient_sdp flash_sdp_enabled fp16_bf16_reduction_math_sdp_allowed "
            "is_built is_ck_sdpa_available is_flash_attention_available math_sdp_enabled matmul "
            "mem_efficient_sdp_enabled preferred_blas_library preferred_linalg_library "
            "preferred_rocm_fa_library sdp_kernel "
        ).split()
    ),
    "torch.cuda": frozenset(
        (
            "BFloat16Storage BFloat16Tensor BoolStorage BoolTensor ByteStorage ByteTensor CUDAGraph "
            "CUDAPluggableAllocator CharStorage CharTensor ComplexDoubleStorage ComplexFloatStorage CudaError "
            "DeferredCudaCallError DoubleStorage DoubleTensor Event ExternalStream FloatStorage FloatTensor "
            "GreenContext HalfStorage HalfTensor IntStorage IntTensor LongStorage LongTensor MemPool "
            "ShortStorage ShortTensor Stream StreamContext amp caching_allocator_alloc "
            "caching_allocator_delete caching_allocator_disabled caching_allocator_enable "
            "can_device_access_peer change_current_allocator check_error clock_rate cudaStatus cudart "
            "current_blas_handle current_device current_solver_handle current_stream default_generators "
            "default_stream device device_count device_memory_used device_of empty_cache "
            "get_allocator_backend get_arch_list get_device_capability get_device_name get_device_properties "
            "get_gencode_flags get_per_process_memory_fraction get_rng_state get_rng_state_all "
            "get_stream_from_external get_sync_debug_mode graph graph_pool_handle graphs has_half has_magma "
            "host_memory_stats host_memory_stats_as_nested_dict init initial_seed ipc_collect is_available "
            "is_bf16_supported is_current_stream_capturing is_initialized is_tf32_supported jiterator "
            "list_gpu_processes make_graphed_callables manual_seed manual_seed_all max_memory_allocated "
            "max_memory_cached max_memory_reserved mem_get_info memory memory_allocated memory_cached "
            "memory_reserved memory_snapshot memory_stats memory_stats_as_nested_dict memory_summary "
            "memory_usage nccl nvtx power_draw profiler random reset_accumulated_host_memory_stats "
            "reset_accumulated_memory_stats reset_max_memory_allocated reset_max_memory_cached "
            "reset_peak_host_memory_stats reset_peak_memory_stats seed seed_all set_device "
            "set_per_process_memory_fraction set_rng_state set_rng_state_all set_stream set_sync_debug_mode "
            "sparse stream streams synchronize temperature tunable use_mem_pool utilization "
        ).split()
    ),
    "torch.cuda.amp": frozenset(
        (
            "GradScaler amp_definitely_not_available autocast custom_bwd custom_fwd "
        ).split()
    ),
    "torch.distributed.fsdp": frozenset(
        (
            "BackwardPrefetch CPUOffload CPUOffloadPolicy DataParallelMeshDims FSDPModule "
            "FullOptimStateDictConfig FullStateDictConfig FullyShardedDataParallel LocalOptimStateDictConfig "
            "LocalStateDictConfig MixedPrecision MixedPrecisionPolicy OffloadPolicy OptimStateDictConfig "
            "OptimStateKeyType ShardedOptimStateDictConfig ShardedStateDictConfig ShardingStrategy "
            "StateDictConfig StateDictSettings StateDictType UnshardHandle fully_shard "
            "register_fsdp_forward_method share_comm_ctx "
        ).split()
    ),
    "torch.nn.parallel": frozenset(
        (
            "DataParallel DistributedDataParallel data_parallel gather parallel_apply replicate scatter "
        ).split()
    ),
    "torch.optim": frozenset(
        (
            "ASGD Adadelta Adafactor Adagrad Adam AdamW Adamax LBFGS Muon NAdam Optimizer RAdam RMSprop Rprop "
            "SGD SparseAdam lr_scheduler swa_utils swap_in_optimizer_params_and_state "
        ).split()
    ),
    "torch.utils.data": frozenset(
        (
            "BatchSampler ChainDataset ConcatDataset DFIterDataPipe DataChunk DataLoader Dataset "
            "DistributedSampler IterDataPipe IterableDataset MapDataPipe RandomSampler Sampler "
            "SequentialSampler StackDataset Subset SubsetRandomSampler TensorDataset WeightedRandomSampler "
            "_DatasetKind argument_validation default_collate default_convert functional_datapipe "
            "get_worker_info guaranteed_datapipes_determinism non_deterministic random_split "
            "runtime_validation runtime_validation_disabled "
        ).split()
    ),
}
