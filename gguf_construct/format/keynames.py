"""Metadata key names used by code: one constant per key of spec/keys.yaml (a key with a placeholder such as
``{arch}`` is a template for ``str.format``).

Generated from spec/keys.yaml by ``gguf-construct docs`` (``docs --check`` fails when it is stale): do not edit.
"""

# fmt: off

__all__ = [
    "GENERAL_ARCHITECTURE", "GENERAL_QUANTIZATION_VERSION", "GENERAL_ALIGNMENT", "GENERAL_TYPE", "GENERAL_NAME",
    "GENERAL_AUTHOR", "GENERAL_VERSION", "GENERAL_ORGANIZATION", "GENERAL_BASENAME", "GENERAL_FINETUNE",
    "GENERAL_DESCRIPTION", "GENERAL_QUANTIZED_BY", "GENERAL_SIZE_LABEL", "GENERAL_LICENSE", "GENERAL_LICENSE_NAME",
    "GENERAL_LICENSE_LINK", "GENERAL_URL", "GENERAL_DOI", "GENERAL_UUID", "GENERAL_REPO_URL", "GENERAL_TAGS",
    "GENERAL_LANGUAGES", "GENERAL_DATASETS", "GENERAL_FILE_TYPE", "GENERAL_SOURCE_URL", "GENERAL_SOURCE_DOI",
    "GENERAL_SOURCE_UUID", "GENERAL_SOURCE_REPO_URL", "GENERAL_BASE_MODEL_COUNT", "GENERAL_BASE_MODEL_ID_NAME",
    "GENERAL_BASE_MODEL_ID_AUTHOR", "GENERAL_BASE_MODEL_ID_VERSION", "GENERAL_BASE_MODEL_ID_ORGANIZATION",
    "GENERAL_BASE_MODEL_ID_URL", "GENERAL_BASE_MODEL_ID_DOI", "GENERAL_BASE_MODEL_ID_UUID",
    "GENERAL_BASE_MODEL_ID_REPO_URL", "ARCH_VOCAB_SIZE", "ARCH_CONTEXT_LENGTH", "ARCH_EMBEDDING_LENGTH",
    "ARCH_BLOCK_COUNT", "ARCH_FEED_FORWARD_LENGTH", "ARCH_USE_PARALLEL_RESIDUAL", "ARCH_TENSOR_DATA_LAYOUT",
    "ARCH_EXPERT_COUNT", "ARCH_EXPERT_USED_COUNT", "ARCH_ATTENTION_HEAD_COUNT", "ARCH_ATTENTION_HEAD_COUNT_KV",
    "ARCH_ATTENTION_MAX_ALIBI_BIAS", "ARCH_ATTENTION_CLAMP_KQV", "ARCH_ATTENTION_LAYER_NORM_EPSILON",
    "ARCH_ATTENTION_LAYER_NORM_RMS_EPSILON", "ARCH_ATTENTION_KEY_LENGTH", "ARCH_ATTENTION_VALUE_LENGTH",
    "ARCH_ATTENTION_USE_NORM", "ARCH_ROPE_DIMENSION_COUNT", "ARCH_ROPE_FREQ_BASE", "ARCH_ROPE_SCALING_TYPE",
    "ARCH_ROPE_SCALING_FACTOR", "ARCH_ROPE_SCALING_ORIGINAL_CONTEXT_LENGTH", "ARCH_ROPE_SCALING_FINETUNED",
    "ARCH_ROPE_SCALE_LINEAR", "ARCH_ROPE_SCALE", "ARCH_SSM_CONV_KERNEL", "ARCH_SSM_INNER_SIZE", "ARCH_SSM_STATE_SIZE",
    "ARCH_SSM_TIME_STEP_RANK", "RWKV_ARCHITECTURE_VERSION", "WHISPER_ENCODER_CONTEXT_LENGTH",
    "WHISPER_ENCODER_EMBEDDING_LENGTH", "WHISPER_ENCODER_BLOCK_COUNT", "WHISPER_ENCODER_MELS_COUNT",
    "WHISPER_ENCODER_ATTENTION_HEAD_COUNT", "WHISPER_DECODER_CONTEXT_LENGTH", "WHISPER_DECODER_EMBEDDING_LENGTH",
    "WHISPER_DECODER_BLOCK_COUNT", "WHISPER_DECODER_ATTENTION_HEAD_COUNT", "TOKENIZER_GGML_MODEL",
    "TOKENIZER_GGML_PRE", "TOKENIZER_GGML_TOKENS", "TOKENIZER_GGML_SCORES", "TOKENIZER_GGML_TOKEN_TYPE",
    "TOKENIZER_GGML_TOKEN_TYPE_COUNT", "TOKENIZER_GGML_MERGES", "TOKENIZER_GGML_ADDED_TOKENS",
    "TOKENIZER_GGML_BOS_TOKEN_ID", "TOKENIZER_GGML_EOS_TOKEN_ID", "TOKENIZER_GGML_UNKNOWN_TOKEN_ID",
    "TOKENIZER_GGML_SEPARATOR_TOKEN_ID", "TOKENIZER_GGML_PADDING_TOKEN_ID", "TOKENIZER_GGML_CLS_TOKEN_ID",
    "TOKENIZER_GGML_MASK_TOKEN_ID", "TOKENIZER_GGML_EOT_TOKEN_ID", "TOKENIZER_GGML_EOM_TOKEN_ID",
    "TOKENIZER_GGML_FIM_PRE_TOKEN_ID", "TOKENIZER_GGML_FIM_SUF_TOKEN_ID", "TOKENIZER_GGML_FIM_MID_TOKEN_ID",
    "TOKENIZER_GGML_FIM_PAD_TOKEN_ID", "TOKENIZER_GGML_FIM_REP_TOKEN_ID", "TOKENIZER_GGML_FIM_SEP_TOKEN_ID",
    "TOKENIZER_GGML_ADD_BOS_TOKEN", "TOKENIZER_GGML_ADD_EOS_TOKEN", "TOKENIZER_GGML_ADD_SEP_TOKEN",
    "TOKENIZER_GGML_ADD_SPACE_PREFIX", "TOKENIZER_GGML_REMOVE_EXTRA_WHITESPACES",
    "TOKENIZER_GGML_PRECOMPILED_CHARSMAP", "TOKENIZER_HUGGINGFACE_JSON", "TOKENIZER_RWKV_WORLD",
    "TOKENIZER_CHAT_TEMPLATE", "TOKENIZER_CHAT_TEMPLATE_NAME", "TOKENIZER_CHAT_TEMPLATES", "ADAPTER_TYPE",
    "ADAPTER_LORA_ALPHA", "SPLIT_NO", "SPLIT_COUNT", "SPLIT_TENSORS_COUNT",
]

GENERAL_ARCHITECTURE = "general.architecture"
GENERAL_QUANTIZATION_VERSION = "general.quantization_version"
GENERAL_ALIGNMENT = "general.alignment"
GENERAL_TYPE = "general.type"
GENERAL_NAME = "general.name"
GENERAL_AUTHOR = "general.author"
GENERAL_VERSION = "general.version"
GENERAL_ORGANIZATION = "general.organization"
GENERAL_BASENAME = "general.basename"
GENERAL_FINETUNE = "general.finetune"
GENERAL_DESCRIPTION = "general.description"
GENERAL_QUANTIZED_BY = "general.quantized_by"
GENERAL_SIZE_LABEL = "general.size_label"
GENERAL_LICENSE = "general.license"
GENERAL_LICENSE_NAME = "general.license.name"
GENERAL_LICENSE_LINK = "general.license.link"
GENERAL_URL = "general.url"
GENERAL_DOI = "general.doi"
GENERAL_UUID = "general.uuid"
GENERAL_REPO_URL = "general.repo_url"
GENERAL_TAGS = "general.tags"
GENERAL_LANGUAGES = "general.languages"
GENERAL_DATASETS = "general.datasets"
GENERAL_FILE_TYPE = "general.file_type"
GENERAL_SOURCE_URL = "general.source.url"
GENERAL_SOURCE_DOI = "general.source.doi"
GENERAL_SOURCE_UUID = "general.source.uuid"
GENERAL_SOURCE_REPO_URL = "general.source.repo_url"
GENERAL_BASE_MODEL_COUNT = "general.base_model.count"
GENERAL_BASE_MODEL_ID_NAME = "general.base_model.{id}.name"
GENERAL_BASE_MODEL_ID_AUTHOR = "general.base_model.{id}.author"
GENERAL_BASE_MODEL_ID_VERSION = "general.base_model.{id}.version"
GENERAL_BASE_MODEL_ID_ORGANIZATION = "general.base_model.{id}.organization"
GENERAL_BASE_MODEL_ID_URL = "general.base_model.{id}.url"
GENERAL_BASE_MODEL_ID_DOI = "general.base_model.{id}.doi"
GENERAL_BASE_MODEL_ID_UUID = "general.base_model.{id}.uuid"
GENERAL_BASE_MODEL_ID_REPO_URL = "general.base_model.{id}.repo_url"
ARCH_VOCAB_SIZE = "{arch}.vocab_size"
ARCH_CONTEXT_LENGTH = "{arch}.context_length"
ARCH_EMBEDDING_LENGTH = "{arch}.embedding_length"
ARCH_BLOCK_COUNT = "{arch}.block_count"
ARCH_FEED_FORWARD_LENGTH = "{arch}.feed_forward_length"
ARCH_USE_PARALLEL_RESIDUAL = "{arch}.use_parallel_residual"
ARCH_TENSOR_DATA_LAYOUT = "{arch}.tensor_data_layout"
ARCH_EXPERT_COUNT = "{arch}.expert_count"
ARCH_EXPERT_USED_COUNT = "{arch}.expert_used_count"
ARCH_ATTENTION_HEAD_COUNT = "{arch}.attention.head_count"
ARCH_ATTENTION_HEAD_COUNT_KV = "{arch}.attention.head_count_kv"
ARCH_ATTENTION_MAX_ALIBI_BIAS = "{arch}.attention.max_alibi_bias"
ARCH_ATTENTION_CLAMP_KQV = "{arch}.attention.clamp_kqv"
ARCH_ATTENTION_LAYER_NORM_EPSILON = "{arch}.attention.layer_norm_epsilon"
ARCH_ATTENTION_LAYER_NORM_RMS_EPSILON = "{arch}.attention.layer_norm_rms_epsilon"
ARCH_ATTENTION_KEY_LENGTH = "{arch}.attention.key_length"
ARCH_ATTENTION_VALUE_LENGTH = "{arch}.attention.value_length"
ARCH_ATTENTION_USE_NORM = "{arch}.attention.use_norm"
ARCH_ROPE_DIMENSION_COUNT = "{arch}.rope.dimension_count"
ARCH_ROPE_FREQ_BASE = "{arch}.rope.freq_base"
ARCH_ROPE_SCALING_TYPE = "{arch}.rope.scaling.type"
ARCH_ROPE_SCALING_FACTOR = "{arch}.rope.scaling.factor"
ARCH_ROPE_SCALING_ORIGINAL_CONTEXT_LENGTH = "{arch}.rope.scaling.original_context_length"
ARCH_ROPE_SCALING_FINETUNED = "{arch}.rope.scaling.finetuned"
ARCH_ROPE_SCALE_LINEAR = "{arch}.rope.scale_linear"
ARCH_ROPE_SCALE = "{arch}.rope.scale"
ARCH_SSM_CONV_KERNEL = "{arch}.ssm.conv_kernel"
ARCH_SSM_INNER_SIZE = "{arch}.ssm.inner_size"
ARCH_SSM_STATE_SIZE = "{arch}.ssm.state_size"
ARCH_SSM_TIME_STEP_RANK = "{arch}.ssm.time_step_rank"
RWKV_ARCHITECTURE_VERSION = "rwkv.architecture_version"
WHISPER_ENCODER_CONTEXT_LENGTH = "whisper.encoder.context_length"
WHISPER_ENCODER_EMBEDDING_LENGTH = "whisper.encoder.embedding_length"
WHISPER_ENCODER_BLOCK_COUNT = "whisper.encoder.block_count"
WHISPER_ENCODER_MELS_COUNT = "whisper.encoder.mels_count"
WHISPER_ENCODER_ATTENTION_HEAD_COUNT = "whisper.encoder.attention.head_count"
WHISPER_DECODER_CONTEXT_LENGTH = "whisper.decoder.context_length"
WHISPER_DECODER_EMBEDDING_LENGTH = "whisper.decoder.embedding_length"
WHISPER_DECODER_BLOCK_COUNT = "whisper.decoder.block_count"
WHISPER_DECODER_ATTENTION_HEAD_COUNT = "whisper.decoder.attention.head_count"
TOKENIZER_GGML_MODEL = "tokenizer.ggml.model"
TOKENIZER_GGML_PRE = "tokenizer.ggml.pre"
TOKENIZER_GGML_TOKENS = "tokenizer.ggml.tokens"
TOKENIZER_GGML_SCORES = "tokenizer.ggml.scores"
TOKENIZER_GGML_TOKEN_TYPE = "tokenizer.ggml.token_type"
TOKENIZER_GGML_TOKEN_TYPE_COUNT = "tokenizer.ggml.token_type_count"
TOKENIZER_GGML_MERGES = "tokenizer.ggml.merges"
TOKENIZER_GGML_ADDED_TOKENS = "tokenizer.ggml.added_tokens"
TOKENIZER_GGML_BOS_TOKEN_ID = "tokenizer.ggml.bos_token_id"
TOKENIZER_GGML_EOS_TOKEN_ID = "tokenizer.ggml.eos_token_id"
TOKENIZER_GGML_UNKNOWN_TOKEN_ID = "tokenizer.ggml.unknown_token_id"
TOKENIZER_GGML_SEPARATOR_TOKEN_ID = "tokenizer.ggml.separator_token_id"
TOKENIZER_GGML_PADDING_TOKEN_ID = "tokenizer.ggml.padding_token_id"
TOKENIZER_GGML_CLS_TOKEN_ID = "tokenizer.ggml.cls_token_id"
TOKENIZER_GGML_MASK_TOKEN_ID = "tokenizer.ggml.mask_token_id"
TOKENIZER_GGML_EOT_TOKEN_ID = "tokenizer.ggml.eot_token_id"
TOKENIZER_GGML_EOM_TOKEN_ID = "tokenizer.ggml.eom_token_id"
TOKENIZER_GGML_FIM_PRE_TOKEN_ID = "tokenizer.ggml.fim_pre_token_id"
TOKENIZER_GGML_FIM_SUF_TOKEN_ID = "tokenizer.ggml.fim_suf_token_id"
TOKENIZER_GGML_FIM_MID_TOKEN_ID = "tokenizer.ggml.fim_mid_token_id"
TOKENIZER_GGML_FIM_PAD_TOKEN_ID = "tokenizer.ggml.fim_pad_token_id"
TOKENIZER_GGML_FIM_REP_TOKEN_ID = "tokenizer.ggml.fim_rep_token_id"
TOKENIZER_GGML_FIM_SEP_TOKEN_ID = "tokenizer.ggml.fim_sep_token_id"
TOKENIZER_GGML_ADD_BOS_TOKEN = "tokenizer.ggml.add_bos_token"
TOKENIZER_GGML_ADD_EOS_TOKEN = "tokenizer.ggml.add_eos_token"
TOKENIZER_GGML_ADD_SEP_TOKEN = "tokenizer.ggml.add_sep_token"
TOKENIZER_GGML_ADD_SPACE_PREFIX = "tokenizer.ggml.add_space_prefix"
TOKENIZER_GGML_REMOVE_EXTRA_WHITESPACES = "tokenizer.ggml.remove_extra_whitespaces"
TOKENIZER_GGML_PRECOMPILED_CHARSMAP = "tokenizer.ggml.precompiled_charsmap"
TOKENIZER_HUGGINGFACE_JSON = "tokenizer.huggingface.json"
TOKENIZER_RWKV_WORLD = "tokenizer.rwkv.world"
TOKENIZER_CHAT_TEMPLATE = "tokenizer.chat_template"
TOKENIZER_CHAT_TEMPLATE_NAME = "tokenizer.chat_template.{name}"
TOKENIZER_CHAT_TEMPLATES = "tokenizer.chat_templates"
ADAPTER_TYPE = "adapter.type"
ADAPTER_LORA_ALPHA = "adapter.lora.alpha"
SPLIT_NO = "split.no"
SPLIT_COUNT = "split.count"
SPLIT_TENSORS_COUNT = "split.tensors.count"
